#!/usr/bin/env bash
# Runs hermesd with the web chat and the offline assistant: no tokens needed.
# Open http://127.0.0.1:7600/ (HERMES_HTTP_ADDR). Ctrl-C stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh run
mkdir -p bin
go build -o bin/hermesd ./cmd/hermesd
exec bin/hermesd run "$@"
