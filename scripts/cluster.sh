#!/usr/bin/env bash
# Starts a 3-member hermesd cluster and a throwaway PostgreSQL on this
# machine, for trying cluster mode (docs/operations.md, "Cluster mode").
# Ctrl-C stops the members (SIGTERM: each drains) and PostgreSQL, and
# deletes the data directory.
#
#   scripts/cluster.sh                 # the offline assistant, no tokens
#   scripts/cluster.sh -etcd           # the members find each other through an etcd
#                                      # started here (127.0.0.1:7698), not a member list
#   TELEGRAM_BOT_TOKEN=… TELEGRAM_WEBHOOK_URL=https://… scripts/cluster.sh
#
# Member i (0..2) serves its admin/web listener on 127.0.0.1:76i0, talks to
# the others on 127.0.0.1:76i1 and answers membership checks on :76i2; with
# TELEGRAM_WEBHOOK_URL set, its webhook listener is 127.0.0.1:76i3 (put a
# load balancer in front of the three). Other settings come from the
# environment as usual.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "cluster.sh: $*" >&2; }
use_etcd=""
case "${1:-}" in
-etcd) use_etcd=1 ;;
"") ;;
*)
	say "usage: scripts/cluster.sh [-etcd]"
	exit 2
	;;
esac

scripts/deps.sh test >/dev/null
bindir=""
if command -v pg_config >/dev/null 2>&1 && [[ -x "$(pg_config --bindir)/initdb" ]]; then
	bindir=$(pg_config --bindir)
else
	bindir=$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -1)")
fi

mkdir -p bin
say "building bin/hermesd"
go build -o bin/hermesd ./cmd/hermesd

work=$(mktemp -d -t hermesd-cluster-XXXXXX)
pids=()
as_pg=()
if [[ $(id -u) -eq 0 ]]; then
	# initdb refuses to run as root: the server runs as nobody.
	chown nobody "$work"
	as_pg=(runuser -u nobody --)
fi
cleanup() {
	# A second Ctrl-C must not cut the cleanup short.
	trap '' INT TERM
	trap - EXIT
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [[ -n "${etcd_pid:-}" ]]; then
		kill -TERM "$etcd_pid" 2>/dev/null || true
		wait "$etcd_pid" 2>/dev/null || true
	fi
	"${as_pg[@]}" "$bindir/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$work"
	say "stopped"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

pgport=7699
say "starting PostgreSQL on 127.0.0.1:$pgport ($work/pg)"
"${as_pg[@]}" "$bindir/initdb" -D "$work/pg" -U postgres -A trust >/dev/null
"${as_pg[@]}" "$bindir/pg_ctl" -D "$work/pg" -l "$work/pg.log" -o "-k $work -h 127.0.0.1 -p $pgport" -w start >/dev/null
url="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"

members="127.0.0.1:7602,127.0.0.1:7612,127.0.0.1:7622"
provider=(HERMES_CLUSTER_MEMBERS="$members")
if [[ -n "$use_etcd" ]]; then
	say "starting etcd on 127.0.0.1:7698 ($work/etcd)"
	etcd --name cluster-sh --data-dir "$work/etcd" \
		--listen-client-urls http://127.0.0.1:7698 --advertise-client-urls http://127.0.0.1:7698 \
		--listen-peer-urls http://127.0.0.1:7697 --initial-advertise-peer-urls http://127.0.0.1:7697 \
		--initial-cluster cluster-sh=http://127.0.0.1:7697 --logger zap --log-level warn \
		>"$work/etcd.log" 2>&1 &
	etcd_pid=$!
	for _ in $(seq 100); do
		curl -fsS http://127.0.0.1:7698/health 2>/dev/null | grep -q '"health":"true"' && break
		sleep 0.1
	done
	provider=(HERMES_CLUSTER_PROVIDER=etcd HERMES_CLUSTER_ETCD_ENDPOINTS=127.0.0.1:7698)
fi
for i in 0 1 2; do
	home="$work/member$i"
	mkdir -p "$home"
	hook=()
	if [[ -n "${TELEGRAM_WEBHOOK_URL:-}" ]]; then
		hook=(TELEGRAM_WEBHOOK_LISTEN="127.0.0.1:76${i}3")
	fi
	env HERMES_HOME="$home" HERMES_HTTP_ADDR="127.0.0.1:76${i}0" HERMES_DATABASE_URL="$url" \
		HERMES_CLUSTER=on HERMES_CLUSTER_BIND="127.0.0.1:76${i}1" HERMES_CLUSTER_HEALTH_PORT="76${i}2" \
		"${provider[@]}" "${hook[@]}" \
		bin/hermesd run >"$work/member$i.log" 2>&1 &
	pids+=($!)
	say "member $i: http://127.0.0.1:76${i}0/status  (log: $work/member$i.log)"
done
say "cluster status: curl http://127.0.0.1:7600/api/cluster ; Ctrl-C stops everything"
wait -n "${pids[@]}" || true
say "a member exited; stopping the others"
