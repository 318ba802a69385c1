#!/usr/bin/env bash
# scale.sh: one row of issue 23's cost curve. On a fresh stack started by
# run.sh (the embedded engine, the hash embedder):
#
#   1. writes SCALE_DOCS (default 10000) files of the benchmark's synthetic
#      corpus (60-120 words each) in 100 directories, each with a
#      .meta.json side-file (type, status, sender, date, description), under
#      SCALE_DIR (default /tmp/docrepo-scale-N; kept, and reused by a later
#      run of the same size);
#   2. imports them with `docrepoctl import` as a new user (resumable:
#      the state file is in SCALE_DIR) and waits until search sees them
#      all;
#   3. runs the perf probe (bench -run probe): every mode sequentially and
#      with 8 clients, the index lag of single uploads, the search
#      process's RSS (anonymous and file-backed apart); with BENCH_PPROF=1
#      a 30 s CPU profile and a heap profile of the search process are kept
#      in SCALE_DIR/profiles;
#   4. times `docrepoctl reindex -verify`, the index's disk use per
#      document, and the search process's start-up after a SIGKILL and
#      after a SIGTERM (until a search through the gateway answers again,
#      the supervisor's restart delay included).
#
# Arguments go to the probe (e.g. -queries 100 -lag-samples 50).
#
#   SCALE_DOCS=100000 BENCH_PPROF=1 BENCH_CMD=services/search/bench/scale.sh \
#     BENCH_OUT=services/search/bench/results/scale-100k.txt bash services/search/bench/run.sh
set -euo pipefail
n=${SCALE_DOCS:-10000}
ctl="$BENCH_BIN/docrepoctl"
bench="$BENCH_BIN/bench"
dir=${SCALE_DIR:-/tmp/docrepo-scale-$n}
mkdir -p "$dir/profiles"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

echo "scale: exporting $n documents to $dir/files" >&2
"$bench" -run export -docs "$n" -export-dir "$dir/files" >&2

user="scale$(date +%s)"
"$ctl" user create "$user" --groups "$user" >/dev/null
token=$("$ctl" key create "$user" --scopes documents_read,documents_write,search)
export DOCREPO_TOKEN="$token"

total() {
	curl -fsS -H "Authorization: Bearer $DOCREPO_TOKEN" -H 'Content-Type: application/json' \
		-d '{"limit": 1, "select": ["id"]}' "$DOCREPO_URL/apiv2/pub/search" |
		sed -n 's/.*"total":"\{0,1\}\([0-9]*\).*/\1/p'
}

echo "scale: importing" >&2
t0=$(now)
# The state file belongs to this user's import (a rerun of this command
# after a crash resumes it; a new stack starts a new one).
"$ctl" import -state "$dir/import-$user.state" "$dir/files" >"$dir/import.summary" 2>"$dir/import.log"
import_s=$(since "$t0")
while [ "$(total)" -lt "$n" ]; do sleep 2; done
indexed_s=$(since "$t0")
echo "# scale run: $n documents ($(nproc) CPUs; load average at the start $(cut -d' ' -f1-3 /proc/loadavg))"
echo "import: docrepoctl import of $n files (100 directories, side-files) in $import_s s: $(awk -v n="$n" -v s="$import_s" 'BEGIN { printf "%.0f", n / s }') docs/s; all searchable after $indexed_s s"

folders=$(psql -At -d "$DATABASE_URL" -c "SELECT string_agg(id::text, ',' ORDER BY name) FROM folder.folders WHERE created_by = (SELECT id FROM identity.users WHERE username = '$user')")
profile_pid=
if [ -n "${BENCH_PPROF_BASE:-}" ]; then
	(sleep 20; curl -fsS -o "$dir/profiles/search-cpu.pprof" "http://127.0.0.1:$((BENCH_PPROF_BASE + 23))/debug/pprof/profile?seconds=30") &
	profile_pid=$!
fi
"$bench" -run probe -docs "$n" -folders "$folders" "$@"
if [ -n "$profile_pid" ]; then
	wait "$profile_pid" || true
	curl -fsS -o "$dir/profiles/search-heap.pprof" "http://127.0.0.1:$((BENCH_PPROF_BASE + 23))/debug/pprof/heap" || true
	echo "profiles: $dir/profiles/search-cpu.pprof (30 s during the probe), search-heap.pprof (after it)"
fi

t0=$(now)
"$ctl" reindex -verify >"$dir/verify.out" 2>&1 || { cat "$dir/verify.out" >&2; exit 1; }
echo "reindex -verify: $(since "$t0") s ($(tail -n 1 "$dir/verify.out"))"

index_bytes=$(du -sb "$(dirname "$DOCREPO_PID_DIR")/index" | cut -f1)
echo "disk: index $(awk -v b="$index_bytes" 'BEGIN { printf "%.0f", b / 1048576 }') MiB, $(awk -v b="$index_bytes" -v n="$n" 'BEGIN { printf "%.0f", b / n }') B per document"

before=$(total)
for sig in KILL TERM; do
	pid=$(cat "$DOCREPO_PID_DIR/search.pid")
	t0=$(now)
	kill -"$sig" "$pid"
	while [ "$(cat "$DOCREPO_PID_DIR/search.pid")" = "$pid" ] || [ "$(total 2>/dev/null || echo 0)" != "$before" ]; do sleep 0.2; done
	echo "start-up after SIG$sig: searches answer again after $(since "$t0") s (supervisor restart delay included)"
done
