#!/usr/bin/env bash
# Regenerates messages/hermes.pb.go from messages/hermes.proto, with Debian's
# protoc and protoc-gen-go built at the google.golang.org/protobuf version
# go.mod pins (so the generator always matches the runtime library).
#   scripts/proto.sh           rewrite messages/hermes.pb.go
#   scripts/proto.sh -check    only compare; exit 1 if the file is stale
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v protoc >/dev/null 2>&1; then
	echo "protoc not found: apt-get install protobuf-compiler" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
mkdir -p "$tmp/out"
PATH="$tmp/bin:$PATH" protoc --go_out="$tmp/out" --go_opt=paths=source_relative messages/hermes.proto

if [[ "${1:-}" == "-check" ]]; then
	if ! diff -u messages/hermes.pb.go "$tmp/out/messages/hermes.pb.go"; then
		echo "messages/hermes.pb.go is stale: run scripts/proto.sh" >&2
		exit 1
	fi
	exit 0
fi
cp "$tmp/out/messages/hermes.pb.go" messages/hermes.pb.go
