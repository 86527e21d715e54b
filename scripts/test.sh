#!/usr/bin/env bash
# Runs every test: vet, formatting, then go test -race on everything except
# the packages that run protoactor's remote/cluster in-process (the library
# races there; see docs/testing.md), which run without -race.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n "$unformatted" ]]; then
	echo "not gofmt-ed:" $unformatted >&2
	exit 1
fi
echo "== go vet"
go vet ./...

# Packages that run protoactor remote/cluster in-process: no -race.
norace='/cluster$'
race_pkgs=$(go list ./... | grep -Ev "$norace" || true)
norace_pkgs=$(go list ./... | grep -E "$norace" || true)

echo "== go test -race"
go test -race -timeout 20m $race_pkgs
if [[ -n "$norace_pkgs" ]]; then
	echo "== go test (remote/cluster, without -race)"
	go test -timeout 10m $norace_pkgs
fi
