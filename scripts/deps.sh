#!/usr/bin/env bash
# Installs the system packages hermesd needs, or says exactly what is missing.
#   scripts/deps.sh run    what the daemon uses (speech)
#   scripts/deps.sh test   that, plus what the tests use (opusinfo, chromium, protoc, pdftotext,
#                          bwrap: the terminal tool's sandbox, optional when running;
#                          postgresql: store/pgtest's throwaway servers; etcd-server: cluster/etcdtest's)
set -euo pipefail

want=(espeak-ng:espeak-ng lame:lame)
if [[ "${1:-run}" == "test" ]]; then
	want+=(opusinfo:opus-tools opusenc:opus-tools chromium:chromium protoc:protobuf-compiler bwrap:bubblewrap)
	# Debian keeps PostgreSQL's server binaries off PATH: look where pg_config says.
	if command -v pg_config >/dev/null 2>&1 && [[ -x "$(pg_config --bindir)/initdb" ]]; then
		:
	elif ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
		want+=(initdb:postgresql)
	fi
	want+=(pdftotext:poppler-utils) # PDF documents sent in a chat (optional when running)
	# cluster/etcdtest's throwaway etcd (the etcd cluster provider's test). Where systemd runs,
	# the package also starts a system etcd on 127.0.0.1:2379 that the tests do not use:
	# `systemctl disable --now etcd` if it is not wanted.
	want+=(etcd:etcd-server)
fi

missing=()
for pair in "${want[@]}"; do
	bin=${pair%%:*} pkg=${pair#*:}
	command -v "$bin" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
# unique package names
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

if ! command -v go >/dev/null 2>&1; then
	echo "hermesd needs Go 1.26 or newer on PATH" >&2
	exit 1
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
	echo "installing: ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
	echo "installing with sudo: ${missing[*]}" >&2
	sudo apt-get update -qq >/dev/null
	sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
	echo "missing system packages: ${missing[*]}" >&2
	echo "install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
