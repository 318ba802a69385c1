#!/usr/bin/env bash
# memory.sh: where the search process's memory goes, and what
# `docrepoctl reindex -verify` costs, on a fresh stack started by run.sh
# with BENCH_PPROF=1 (the embedded engine, the hash embedder):
#
#   1. writes and imports SCALE_DOCS (default 100000) documents of the
#      benchmark's synthetic corpus as scale.sh does (100 directories,
#      side-files), and waits until search sees them all;
#   2. snapshots the search process: RSS (anonymous and file-backed
#      apart), its CPU time, the Go runtime's memory statistics (heap in
#      use, idle, released to the system, the next GC's goal) before and
#      after a forced collection, and a heap profile (inuse_space);
#   3. times `docrepoctl reindex -verify`, with the CPU time the search
#      and document processes spent on it and a CPU profile of each;
#   4. restarts the search process (SIGTERM; the supervisor starts it
#      again) and snapshots it again once searches answer.
#
# Everything is kept in SCALE_DIR/mem (default
# /tmp/docrepo-memory-N/mem). With MEMORY_HOLD=1 the stack stays up
# afterwards until SCALE_DIR/stop exists, with SCALE_DIR/env.sh to reach
# it (to swap in another search binary and measure again).
#
#   SCALE_DOCS=100000 BENCH_PPROF=1 BENCH_CMD=services/search/bench/memory.sh \
#     BENCH_BASE_PORT=19400 BENCH_HTTP_PORT=18480 nice -n 19 bash services/search/bench/run.sh
set -euo pipefail
: "${BENCH_PPROF_BASE:?run through run.sh with BENCH_PPROF=1}"
n=${SCALE_DOCS:-100000}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
dir=${SCALE_DIR:-/tmp/docrepo-memory-$n}
out="$dir/mem"
mkdir -p "$out"
search_pprof=http://127.0.0.1:$((BENCH_PPROF_BASE + 23))
document_pprof=http://127.0.0.1:$((BENCH_PPROF_BASE + 21))
# cpu PID: user + system CPU seconds of a process.
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
pidof_svc() { cat "$DOCREPO_PID_DIR/$1.pid"; }

echo "memory: exporting $n documents to $dir/files" >&2
export_corpus "$n" "$dir/files"
new_user mem
{
	echo "export DOCREPO_URL=$DOCREPO_URL DATABASE_URL='$DATABASE_URL' DOCREPO_PID_DIR=$DOCREPO_PID_DIR BENCH_BIN=$BENCH_BIN"
	echo "export DOCREPO_TOKEN=$token SEARCH_PPROF=$search_pprof DOCUMENT_PPROF=$document_pprof"
} >"$dir/env.sh"

# snapshot LABEL: the search process's memory as the kernel and the Go
# runtime see it, and a heap profile.
snapshot() {
	local label=$1 pid
	pid=$(pidof_svc search)
	echo "## $label ($n documents, pid $pid, load $(load))"
	echo "rss: $(grep -E '^(VmRSS|RssAnon|RssFile|VmHWM)' /proc/"$pid"/status | tr -s ' \t\n' ' ')"
	echo "cpu: search process $(cpu "$pid") s since it started"
	curl -fsS -o "$out/$label-heap.txt" "$search_pprof/debug/pprof/heap?debug=1"
	echo "memstats: $(grep -E '^# (HeapAlloc|HeapSys|HeapIdle|HeapInuse|HeapReleased|Stack|MSpan|GCSys|OtherSys|NextGC|NumGC|Sys) ' "$out/$label-heap.txt" | sed 's/^# //' | tr '\n' ';')"
	# A forced collection: what is live (the profile's inuse_space is
	# as of the last collection).
	curl -fsS -o "$out/$label-heap.pprof" "$search_pprof/debug/pprof/heap?gc=1"
	curl -fsS -o "$out/$label-heap-gc.txt" "$search_pprof/debug/pprof/heap?debug=1"
	echo "memstats after a forced GC: $(grep -E '^# (HeapAlloc|HeapInuse|HeapIdle|HeapReleased|NextGC|GCCPUFraction) ' "$out/$label-heap-gc.txt" | sed 's/^# //' | tr '\n' ';')"
	echo "rss after it: $(grep -E '^(RssAnon|RssFile)' /proc/"$pid"/status | tr -s ' \t\n' ' ')"
	go tool pprof -sample_index=inuse_space -top -nodecount=30 "$BENCH_BIN/search" "$out/$label-heap.pprof" 2>/dev/null | sed -n '1,40p' || true
	echo
}

echo "# memory run: $n documents ($(nproc) CPUs; load $(load))"
t0=$(now)
scpu0=$(cpu "$(pidof_svc search)")
"$ctl" import -state "$dir/import-$user.state" "$dir/files" >"$dir/import.summary" 2>"$dir/import.log" &
ipid=$!
# SCALE_DIR/stop-import ends the import early: everything is then
# measured at the count reached.
while kill -0 "$ipid" 2>/dev/null; do
	if [ -f "$dir/stop-import" ]; then kill -KILL "$ipid"; break; fi
	sleep 2
done
if wait "$ipid"; then :; elif [ -f "$dir/stop-import" ]; then
	sleep 5
	n=$(psql -At -d "$DATABASE_URL" -c "SELECT count(*) FROM document.documents WHERE entry_person = '$user'")
	echo "import: STOPPED early by $dir/stop-import at $n documents; everything below is at $n"
else
	tail -n 20 "$dir/import.log" >&2; exit 1
fi
while [ "$(total)" -lt "$n" ]; do sleep 2; done
echo "import: $n documents searchable after $(since "$t0") s; search process CPU $(awk -v a="$scpu0" -v b="$(cpu "$(pidof_svc search)")" -v n="$n" 'BEGIN { printf "%.1f s, %.3f ms/doc", b - a, (b - a) * 1000 / n }') (load $(load))"
sleep 10
snapshot after-import

# verify: wall, the CPU of the two processes it runs in, a profile of each.
spid=$(pidof_svc search); dpid=$(pidof_svc document)
s0=$(cpu "$spid"); d0=$(cpu "$dpid")
secs=${MEMORY_VERIFY_PROFILE_S:-20}
curl -fsS -o "$out/verify-search-cpu.pprof" "$search_pprof/debug/pprof/profile?seconds=$secs" &
p1=$!
curl -fsS -o "$out/verify-document-cpu.pprof" "$document_pprof/debug/pprof/profile?seconds=$secs" &
p2=$!
t0=$(now)
if "$ctl" reindex -verify >"$out/verify.out" 2>&1; then
	echo "reindex -verify: $(since "$t0") s wall; CPU search $(awk -v a="$s0" -v b="$(cpu "$spid")" 'BEGIN { printf "%.2f", b - a }') s, document $(awk -v a="$d0" -v b="$(cpu "$dpid")" 'BEGIN { printf "%.2f", b - a }') s (load $(load)): $(tail -n 1 "$out/verify.out")"
else
	echo "reindex -verify FAILED after $(since "$t0") s:"; tail -n 20 "$out/verify.out"
fi
wait "$p1" "$p2" || true
for p in search document; do
	echo "## $p: CPU profile during verify (first $secs s)"
	go tool pprof -top -nodecount=25 "$BENCH_BIN/$p" "$out/verify-$p-cpu.pprof" 2>/dev/null | sed -n '1,32p' || true
done

before=$(total)
pid=$(pidof_svc search)
t0=$(now)
kill -TERM "$pid"
wait_back "pidof_svc search" "$pid" "$before"
echo "restart: searches answer again after $(since "$t0") s (load $(load))"
sleep 10
snapshot after-restart

if [ -n "${MEMORY_HOLD:-}" ]; then
	echo "memory: holding the stack until $dir/stop exists (env: $dir/env.sh)" >&2
	while [ ! -f "$dir/stop" ]; do sleep 5; done
fi
