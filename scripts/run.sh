#!/usr/bin/env bash
# Runs hermesd with the web chat and the offline assistant: no tokens needed.
# Open http://127.0.0.1:7600/ (HERMES_HTTP_ADDR). Ctrl-C stops it cleanly.
# Arguments go to `hermesd run`; `hermesd setup` configures models and bots.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "run.sh: $*" >&2; }

say "checking system packages (espeak-ng, lame)"
scripts/deps.sh run

# The commit and its time, stamped into the binary for `hermesd version`
# (the Go toolchain's own VCS stamping may be off: GOFLAGS=-buildvcs=false).
commit=$(git rev-parse HEAD 2>/dev/null || true)
if [[ -n "$commit" ]] && [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
	commit+="+dirty"
fi
built=$(git log -1 --format=%cI 2>/dev/null || true)

mkdir -p bin
if [[ ! -x bin/hermesd ]]; then
	say "building bin/hermesd (the first build compiles every dependency: about a minute)"
else
	say "building bin/hermesd (only what changed)"
fi
start=$SECONDS
go build -ldflags "-X main.buildCommit=${commit} -X main.buildTime=${built}" -o bin/hermesd ./cmd/hermesd
say "built in $((SECONDS - start))s: $(bin/hermesd version)"
say "starting: bin/hermesd run${*:+ $*} (web chat on ${HERMES_HTTP_ADDR:-127.0.0.1:7600})"
exec bin/hermesd run "$@"
