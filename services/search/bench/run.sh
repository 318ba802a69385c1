#!/usr/bin/env bash
# run.sh: a complete benchmark run on fresh, real processes.
#
# Builds every service, the gateway and devstack into a temporary bin
# directory, creates a fresh Postgres database (PGHOST/PGPORT/PGUSER, default
# 127.0.0.1:5432 postgres), starts the split stack with devstack (each
# service its own process, NATS JetStream in devstack's process, the
# embedded search engine, so the search process runs the indexer), runs the
# benchmark against the gateway and stops everything. Arguments are passed
# to the benchmark (e.g. -docs 10000 -run scifact, or -run ingest). The report goes to
# stdout and, with BENCH_OUT=FILE, to FILE too.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d /tmp/docrepo-bench.XXXXXX)
db="docrepo_bench_$(date +%s)"
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
base_port=${BENCH_BASE_PORT:-19100}
http_addr=127.0.0.1:${BENCH_HTTP_PORT:-18080}
devstack_pid=
cleanup() {
	if [ -n "$devstack_pid" ]; then kill -INT "$devstack_pid" 2>/dev/null || true; wait "$devstack_pid" 2>/dev/null || true; fi
	psql -q -c "DROP DATABASE IF EXISTS $db" postgres >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "bench: building into $work/bin" >&2
mkdir -p "$work/bin"
# STACK_ROOT builds the stack from another checkout (a before/after run:
# the same benchmark against an older stack).
stack_root=${STACK_ROOT:-$root}
# As make build and the launcher: the SIMD kernels of the sentence encoder
# (GOEXPERIMENT=nosimd for a plain build).
export GOEXPERIMENT=${GOEXPERIMENT:-simd}
for d in services/document services/folder services/schema services/search gateway; do
	(cd "$stack_root/$d" && go build -o "$work/bin/$(basename "$d")" .)
done
for c in devstack devnats docrepoctl; do
	if [ -d "$stack_root/pkg/cmd/$c" ]; then (cd "$stack_root/pkg" && go build -o "$work/bin/$c" ./cmd/$c); fi
done
(cd "$root/services/search" && go build -o "$work/bin/bench" ./bench)

psql -q -c "CREATE DATABASE $db" postgres
export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
# BENCH_PPROF=1 gives every process a pprof endpoint at base port + 21..26
# (profile.sh collects them).
pprof_flag=()
if [ -n "${BENCH_PPROF:-}" ]; then pprof_flag=(-pprof); export BENCH_PPROF_BASE="$base_port"; fi
(cd "$root" && exec "$work/bin/devstack" -database-url "$DATABASE_URL" -data-dir "$work/data" -bin-dir "$work/bin" \
	-http-addr "$http_addr" -base-port "$base_port" -nats-port $((base_port + 50)) "${pprof_flag[@]}") >"$work/devstack.log" 2>&1 &
devstack_pid=$!
for _ in $(seq 1 600); do
	[ -f "$work/data/devstack.env" ] && curl -fsS "http://$http_addr/readyz" >/dev/null 2>&1 && break
	if ! kill -0 "$devstack_pid" 2>/dev/null; then cat "$work/devstack.log" >&2; exit 1; fi
	sleep 0.5
done
set -a; . "$work/data/devstack.env"; set +a
# BENCH_VACUUM_S=S runs VACUUM (ANALYZE) on the bench database every S
# seconds: a Postgres with autovacuum off (as the shared development server
# here) never analyzes the growing tables, and the planner then chooses
# sequential scans (at 69 k documents linked_files was read whole ~7 times
# a second during an import).
if [ -n "${BENCH_VACUUM_S:-}" ]; then
	(while sleep "$BENCH_VACUUM_S"; do
		t=$(date +%s.%N)
		psql -q -c "VACUUM (ANALYZE)" "$db" >/dev/null 2>&1 || break
		echo "bench: $(date -u +%H:%M:%S) VACUUM (ANALYZE) in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	done) &
fi
export DOCREPO_PID_DIR="$work/data/pids"
echo "bench: stack up at $DOCREPO_URL (log $work/devstack.log)" >&2
# BENCH_CMD runs another benchmark (e.g. import.sh) against the stack, with
# DOCREPO_URL, DATABASE_URL, DOCREPO_PID_DIR and BENCH_BIN (the binaries).
bench=("$work/bin/bench" "$@")
if [ -n "${BENCH_CMD:-}" ]; then export BENCH_BIN="$work/bin"; bench=("$BENCH_CMD" "$@"); fi
if [ -n "${BENCH_OUT:-}" ]; then
	"${bench[@]}" | tee "$BENCH_OUT"
else
	"${bench[@]}"
fi
# BENCH_KEEP=1 keeps the stack (processes, database, data) up after the
# benchmark, for measurements on the same data later (scale.sh with
# SCALE_MEASURE_ONLY=1): it writes $work/stack.env (source it with set -a)
# and waits until $work/release exists, then stops and deletes as usual.
if [ -n "${BENCH_KEEP:-}" ]; then
	{
		cat "$work/data/devstack.env"
		echo "DOCREPO_PID_DIR=$DOCREPO_PID_DIR"
		echo "BENCH_BIN=$work/bin"
		echo "BENCH_PPROF_BASE=${BENCH_PPROF_BASE:-}"
		echo "BENCH_DEVSTACK_PID=$devstack_pid"
		echo "BENCH_WORK=$work"
	} >"$work/stack.env"
	echo "bench: stack kept up: set -a; . $work/stack.env; set +a   (touch $work/release to stop it)" >&2
	while [ ! -e "$work/release" ] && kill -0 "$devstack_pid" 2>/dev/null; do sleep 5; done
fi
