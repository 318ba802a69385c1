#!/usr/bin/env bash
# switch.sh: switching embedders on a live index (issue 20, item 5), on
# fresh, real processes as run.sh starts them:
#
#   1. builds the stack (GOEXPERIMENT=simd), creates a fresh database and
#      starts devstack with DOCREPO_EMBEDDER=hash;
#   2. uploads SWITCH_DOCS (default 20000) documents with 8 clients
#      (bench -run ingest; SWITCH_CORPUS=scifact, the default: SciFact's
#      5,183 abstracts and variations of them, realistic English; or
#      synthetic ~1 KB texts) and stops the stack;
#   3. starts it again on the same database and data directory under the
#      default embedder (use: the sentence encoder blended with the hash
#      vector, from DOCREPO_USE_MODEL_DIR or deploy/dev/model.sh's
#      directory) with devstack's DOCREPO_EMBEDDER_CHANGE=rebuild: the
#      search process re-embeds the index online;
#   4. bench -run switch: full-text and vector searches (SciFact's claims,
#      judged against its qrels) every 100 ms until a vector search is
#      answered by the re-embedded index (latencies, errors, answers from
#      the old index meanwhile), the progress from
#      docrepo_indexer_reembed_done / _total and passages embedded, the
#      load average, then both kinds of search on the switched index; and
#      the search log's re-embedding lines. SWITCH_MAX (e.g. 60m) stops
#      the watch early and reports the rate and the projected end.
#
#   SWITCH_DOCS=20000 BENCH_OUT=services/search/bench/results/switch.txt \
#     bash services/search/bench/switch.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
n=${SWITCH_DOCS:-20000}
corpus=${SWITCH_CORPUS:-scifact}
switch_max=${SWITCH_MAX:-0}
work=$(mktemp -d /tmp/docrepo-switch.XXXXXX)
db="docrepo_switch_$(date +%s)"
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
base_port=${BENCH_BASE_PORT:-19100}
http_addr=127.0.0.1:${BENCH_HTTP_PORT:-18080}
export GOEXPERIMENT=${GOEXPERIMENT:-simd}
devstack_pid=
stop_stack() {
	if [ -n "$devstack_pid" ]; then kill -INT "$devstack_pid" 2>/dev/null || true; wait "$devstack_pid" 2>/dev/null || true; fi
	devstack_pid=
}
cleanup() {
	stop_stack
	psql -q -c "DROP DATABASE IF EXISTS $db" postgres >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
out() { if [ -n "${BENCH_OUT:-}" ]; then tee -a "$BENCH_OUT"; else cat; fi; }
if [ -n "${BENCH_OUT:-}" ]; then : >"$BENCH_OUT"; fi

model_dir=${DOCREPO_USE_MODEL_DIR:-$("$root/deploy/dev/model.sh" ensure)}
echo "switch: building into $work/bin" >&2
mkdir -p "$work/bin"
for d in services/document services/folder services/schema services/search gateway; do
	(cd "$root/$d" && go build -o "$work/bin/$(basename "$d")" .)
done
for c in devstack devnats docrepoctl; do (cd "$root/pkg" && go build -o "$work/bin/$c" ./cmd/$c); done
(cd "$root/services/search" && go build -o "$work/bin/bench" ./bench)
psql -q -c "CREATE DATABASE $db" postgres
export DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"

# start_stack LOG [ENV=VALUE...]: devstack on the same database and data
# directory, with the given environment; waits until the gateway is ready.
start_stack() {
	local log=$1
	shift
	rm -f "$work/data/devstack.env"
	(cd "$root" && exec env "$@" "$work/bin/devstack" -database-url "$DATABASE_URL" -data-dir "$work/data" -bin-dir "$work/bin" \
		-http-addr "$http_addr" -base-port "$base_port" -nats-port $((base_port + 50))) >"$log" 2>&1 &
	devstack_pid=$!
	for _ in $(seq 1 600); do
		[ -f "$work/data/devstack.env" ] && curl -fsS "http://$http_addr/readyz" >/dev/null 2>&1 && break
		if ! kill -0 "$devstack_pid" 2>/dev/null; then cat "$log" >&2; exit 1; fi
		sleep 0.5
	done
	set -a; . "$work/data/devstack.env"; set +a
	export DOCREPO_PID_DIR="$work/data/pids"
}

echo "switch: the stack with the hash embedder; $n documents" >&2
start_stack "$work/hash.log" DOCREPO_EMBEDDER=hash
echo "# load average before the ingest: $(cut -d' ' -f1-3 /proc/loadavg)" | out
"$work/bin/bench" -run ingest -ingest-docs "$n" -ingest-corpus "$corpus" -tenant-file "$work/tenant" | out
stop_stack

echo "switch: the stack again under the default embedder (use, $model_dir) with DOCREPO_EMBEDDER_CHANGE=rebuild" >&2
start_stack "$work/use.log" DOCREPO_EMBEDDER= DOCREPO_USE_MODEL_DIR="$model_dir"
DOCREPO_TOKEN=$(cat "$work/tenant") "$work/bin/bench" -run switch -ingest-corpus "$corpus" -switch-max "$switch_max" | out
echo "search log, re-embedding (first and last lines):" | out
grep -E "re-embedding the index|the index is re-embedded|it is re-embedded|vector search answers from|cannot be built here|new index is in use" "$work/use.log" |
	sed -E 's/^.*(level=|msg=|"msg":)/\1/' >"$work/reembed.log" || true
{ head -8 "$work/reembed.log"; echo "…"; tail -6 "$work/reembed.log"; } | out
