#!/usr/bin/env bash
# profile.sh: CPU profiles of every process of the stack while the ingest
# benchmark runs (issue 13: profile first). It runs the benchmark in the
# background, waits PROFILE_DELAY seconds (default 10) for the load to
# settle, takes a PROFILE_SECONDS (default 30) CPU profile of document,
# folder, schema, search and gateway at once, waits for the benchmark, and
# prints each process's top functions. The profiles stay in PROFILE_DIR
# (default /tmp/docrepo-profiles) for `go tool pprof`.
#
#   BENCH_PPROF=1 BENCH_CMD=services/search/bench/profile.sh \
#     bash services/search/bench/run.sh -run ingest -ingest-docs 20000
set -euo pipefail
: "${BENCH_PPROF_BASE:?run through run.sh with BENCH_PPROF=1}"
out=${PROFILE_DIR:-/tmp/docrepo-profiles}
delay=${PROFILE_DELAY:-10}
secs=${PROFILE_SECONDS:-30}
mkdir -p "$out"
"$BENCH_BIN/bench" "$@" &
bench=$!
sleep "$delay"
declare -A port=([document]=21 [folder]=22 [search]=23 [schema]=24 [gateway]=26)
for p in "${!port[@]}"; do
	curl -fsS -o "$out/$p.pprof" "http://127.0.0.1:$((BENCH_PPROF_BASE + ${port[$p]}))/debug/pprof/profile?seconds=$secs" &
done
wait "$bench"
wait
for p in gateway document folder schema search; do
	echo "## $p: top of $secs s CPU profile"
	go tool pprof -top -nodecount=25 "$BENCH_BIN/$p" "$out/$p.pprof" 2>/dev/null | sed -n '1,32p'
	echo
done
