#!/usr/bin/env bash
# scale.sh: one row of issue 23's cost curve. On a fresh stack started by
# run.sh with DOCREPO_EMBEDDER=hash (the embedded engine, the hash embedder;
# without it the stack runs the product's default, use, whose graph build
# is another measurement: scale.sh refuses unless SCALE_ANY_EMBEDDER=1):
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
# For the 1 M run (item 3 of issue 23), optional:
#   SCALE_KILL_AT=N       SIGKILL the import once N files are in its state
#                         file, then run the same command again (resume);
#   SCALE_STOP_AT=HH:MM   (UTC) stop the import there if it has not
#                         finished (or when a file SCALE_DIR/stop appears)
#                         and measure at the count reached (the report
#                         says so);
#   SCALE_PROGRESS_S=S    a progress line every S s (default 60): files
#                         done, searchable documents, docs/s over the
#                         interval and overall, load average;
#   SCALE_IMPORT_ARGS=... more arguments of docrepoctl import (e.g.
#                         -concurrency 16); SCALE_RESUME_ARGS=... the
#                         resumed run's instead (compares two settings on
#                         one run);
#   SCALE_DONE_FILE=F     touch F the moment the import ends (others on
#                         the machine wait for it before using the CPU).
#
# Measuring the same data again (with run.sh's BENCH_KEEP=1 the stack stays
# up; source its stack.env): SCALE_MEASURE_ONLY=1 skips the export and the
# import and takes the user, token and count from SCALE_DIR/scale.env;
# SCALE_SWAP_SEARCH=BIN first puts BIN in place of the search binary and
# restarts the search process with SIGTERM (the supervisor starts the new
# binary), timing its start-up and its RSS before any query. SCALE_TAG
# names this pass's profiles (default: after-import, or remeasure).
# SCALE_PROBE_ONLY=1 stops after the probe (no disk figures, restarts or
# verify): with probe arguments such as -probe-modes and -slow-clients, a
# quick pass per binary when alternating two.
#
#   DOCREPO_EMBEDDER=hash SCALE_DOCS=100000 BENCH_PPROF=1 BENCH_CMD=services/search/bench/scale.sh \
#     BENCH_OUT=services/search/bench/results/scale-100k.txt bash services/search/bench/run.sh
set -euo pipefail
n=${SCALE_DOCS:-10000}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
dir=${SCALE_DIR:-/tmp/docrepo-scale-$n}
mkdir -p "$dir/profiles"
pprof_url() { echo "http://127.0.0.1:$((BENCH_PPROF_BASE + $1))/debug/pprof/$2"; }
rss() { grep -E '^(VmRSS|RssAnon|RssFile)' /proc/"$1"/status | tr -s ' \t\n' ' '; }
search_pid() { cat "$DOCREPO_PID_DIR/search.pid"; }
# The embedder the search process opened the index with (its log line).
embedder=$(sed -n 's/.*msg="embedded search engine".*embedder=\([^ ]*\).*/\1/p' \
	"$(dirname "$(dirname "$DOCREPO_PID_DIR")")/devstack.log" | tail -n 1)
echo "# embedder: ${embedder:-unknown}"
case "$embedder" in
hash:*) ;;
*)
	if [ -z "${SCALE_ANY_EMBEDDER:-}" ]; then
		echo "scale: the stack's search runs embedder '${embedder:-unknown}', not hash: start run.sh with DOCREPO_EMBEDDER=hash (or set SCALE_ANY_EMBEDDER=1)" >&2
		exit 1
	fi
	;;
esac
measure_only=${SCALE_MEASURE_ONLY:-}
if [ -n "$measure_only" ]; then
	# shellcheck disable=SC1091
	. "$dir/scale.env"
	export DOCREPO_TOKEN="$token"
	tag=${SCALE_TAG:-remeasure}
else
	tag=${SCALE_TAG:-after-import}
	echo "scale: exporting $n documents to $dir/files" >&2
	export_corpus "$n" "$dir/files"
	new_user scale
fi

if [ -z "$measure_only" ]; then
	echo "scale: importing" >&2
	state="$dir/import-$user.state"
	stop_at=
	if [ -n "${SCALE_STOP_AT:-}" ]; then stop_at=$(date -u -d "$SCALE_STOP_AT" +%s); fi
	every=${SCALE_PROGRESS_S:-60}
	done_files() { if [ -f "$state" ]; then wc -l <"$state"; else echo 0; fi; }
	# import_run runs one docrepoctl import (the state file belongs to this
	# user's import: a rerun after a crash resumes it), printing progress,
	# killing it at $1 files done (0: never) or at SCALE_STOP_AT; it sets
	# import_end to how it ended: done, killed or stopped.
	import_run() {
		local kill_at=$1 pid last_t last_n t d
		# shellcheck disable=SC2086
		"$ctl" import -state "$state" $2 "$dir/files" >>"$dir/import.summary" 2>>"$dir/import.log" &
		pid=$!
		last_t=$(now); last_n=$(done_files); import_end=done
		while kill -0 "$pid" 2>/dev/null; do
			sleep 1
			d=$(done_files)
			if [ "$kill_at" -gt 0 ] && [ "$d" -ge "$kill_at" ]; then kill -KILL "$pid"; import_end=killed; break; fi
			if { [ -n "$stop_at" ] && [ "$(date +%s)" -ge "$stop_at" ]; } || [ -f "$dir/stop" ]; then kill -KILL "$pid"; import_end=stopped; break; fi
			t=$(now)
			if awk -v a="$last_t" -v b="$t" -v e="$every" 'BEGIN { exit !(b - a >= e) }'; then
				echo "progress $(date -u +%H:%M:%S): $d files imported, $(total 2>/dev/null || echo '?') searchable; $(awk -v a="$last_t" -v b="$t" -v m="$last_n" -v n="$d" 'BEGIN { printf "%.0f", (n - m) / (b - a) }') docs/s over the last $(awk -v a="$last_t" -v b="$t" 'BEGIN { printf "%.0f", b - a }') s, $(awk -v a="$t0" -v b="$t" -v n="$d" 'BEGIN { printf "%.0f", n / (b - a) }') overall; load $(cut -d' ' -f1-3 /proc/loadavg)"
				last_t=$t; last_n=$d
			fi
		done
		wait "$pid" 2>/dev/null || { [ "$import_end" != done ] || { tail -n 20 "$dir/import.log" >&2; return 1; }; }
	}
	count() { psql -At -d "$DATABASE_URL" -c "SELECT count(*) FROM document.documents WHERE entry_person = '$user'"; }
	echo "# scale run: $n documents ($(nproc) CPUs; load average at the start $(cut -d' ' -f1-3 /proc/loadavg))"
	t0=$(now)
	echo "import: docrepoctl import ${SCALE_IMPORT_ARGS:-} (resume: ${SCALE_RESUME_ARGS-${SCALE_IMPORT_ARGS:-}})"
	import_run "${SCALE_KILL_AT:-0}" "${SCALE_IMPORT_ARGS:-}"
	if [ "$import_end" = killed ]; then
		t1=$(now)
		echo "import: SIGKILL at $(done_files) files in the state file after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; $(count) documents; resuming with the same command"
		import_run 0 "${SCALE_RESUME_ARGS-${SCALE_IMPORT_ARGS:-}}"
	fi
	import_s=$(since "$t0")
	if [ -n "${SCALE_DONE_FILE:-}" ]; then touch "$SCALE_DONE_FILE"; echo "import: ended ($import_end) at $(date -u +%H:%M:%S); touched $SCALE_DONE_FILE" >&2; fi
	if [ "$import_end" = stopped ]; then
		n=$(count)
		echo "import: STOPPED at $(date -u +%H:%M) (SCALE_STOP_AT ${SCALE_STOP_AT:-unset} UTC or $dir/stop) before the end, $n documents; everything below is measured at $n documents"
	fi
	docs=$(count)
	folders_n=$(psql -At -d "$DATABASE_URL" -c "SELECT count(*) FROM folder.folders WHERE created_by = (SELECT id FROM identity.users WHERE username = '$user')")
	echo "import: docrepoctl import of $n files (100 directories, side-files) in $import_s s: $(awk -v n="$n" -v s="$import_s" 'BEGIN { printf "%.0f", n / s }') docs/s; result: $docs documents in $folders_n folders ($(tail -n 1 "$dir/import.summary" 2>/dev/null))"
	# A failed count (search restarting) is 0: it must not end the wait.
	while searchable=$(total 2>/dev/null || echo 0) && [ "$searchable" -lt "$n" ]; do sleep 2; done
	indexed_s=$(since "$t0")
	echo "import: all $n searchable after $indexed_s s (load $(cut -d' ' -f1-3 /proc/loadavg))"
	printf 'user=%q\ntoken=%q\nn=%q\n' "$user" "$token" "$n" >"$dir/scale.env"
fi
if [ -n "$measure_only" ]; then
	echo "# scale run, measuring again ($tag) at $n documents on the kept stack ($(nproc) CPUs; load $(load)); $(date -u +%H:%M)"
	if [ -n "${SCALE_SWAP_SEARCH:-}" ]; then
		cp "$SCALE_SWAP_SEARCH" "$BENCH_BIN/search.new" && mv -f "$BENCH_BIN/search.new" "$BENCH_BIN/search"
		before=$(total)
		pid=$(cat "$DOCREPO_PID_DIR/search.pid")
		t0=$(now)
		kill -TERM "$pid"
		wait_back search_pid "$pid" "$before"
		pid=$(cat "$DOCREPO_PID_DIR/search.pid")
		echo "swap: search binary replaced by $SCALE_SWAP_SEARCH ($(go version -m "$BENCH_BIN/search" 2>/dev/null | sed -n 's/.*vcs.revision=//p' | cut -c1-7)); start-up after SIGTERM: searches answer again after $(since "$t0") s (load $(load))"
		echo "search process after start-up (pid $pid), no query yet: $(rss "$pid")"
	fi
fi
pid=$(cat "$DOCREPO_PID_DIR/search.pid")
echo "search process before the probe (pid $pid): $(rss "$pid") (load $(load))"
if [ -n "${BENCH_PPROF_BASE:-}" ]; then
	curl -fsS -o "$dir/profiles/$tag-search-heap-before-probe.pprof" "$(pprof_url 23 'heap?gc=1')" || true
fi

folders=$(psql -At -d "$DATABASE_URL" -c "SELECT string_agg(id::text, ',' ORDER BY name) FROM folder.folders WHERE created_by = (SELECT id FROM identity.users WHERE username = '$user')")
profile_pid=
if [ -n "${BENCH_PPROF_BASE:-}" ]; then
	(sleep 20; curl -fsS -o "$dir/profiles/$tag-search-cpu.pprof" "$(pprof_url 23 'profile?seconds=30')") &
	profile_pid=$!
fi
"$bench" -run probe -docs "$n" -folders "$folders" "$@" || echo "probe FAILED (exit $?)"
if [ -n "$profile_pid" ]; then
	wait "$profile_pid" || true
	curl -fsS -o "$dir/profiles/$tag-search-heap.pprof" "$(pprof_url 23 'heap?gc=1')" || true
	echo "profiles: $dir/profiles/$tag-search-cpu.pprof (30 s during the probe), $tag-search-heap-before-probe.pprof, $tag-search-heap.pprof (after it)"
fi
if [ -n "${SCALE_PROBE_ONLY:-}" ]; then
	exit 0
fi

data=$(dirname "$DOCREPO_PID_DIR")
mib() { awk -v b="$1" 'BEGIN { printf "%.0f MiB", b / 1048576 }'; }
perdoc() { awk -v b="$1" -v n="$n" 'BEGIN { printf "%.0f B/doc", b / n }'; }
index_bytes=$(du -sb "$data/index" | cut -f1)
pg_bytes=$(psql -At -d "$DATABASE_URL" -c "SELECT pg_database_size(current_database())")
echo "disk: index $(mib "$index_bytes"), $(perdoc "$index_bytes"); Postgres database $(mib "$pg_bytes"), $(perdoc "$pg_bytes")"
for d in "$data"/*/; do
	b=$(du -sb "$d" | cut -f1)
	echo "disk: data dir $(basename "$d"): $(mib "$b"), $(perdoc "$b")"
done

before=$(total)
for sig in KILL TERM; do
	pid=$(cat "$DOCREPO_PID_DIR/search.pid")
	t0=$(now)
	kill -"$sig" "$pid"
	wait_back search_pid "$pid" "$before"
	echo "start-up after SIG$sig: searches answer again after $(since "$t0") s (supervisor restart delay included; load $(cut -d' ' -f1-3 /proc/loadavg))"
	pid=$(cat "$DOCREPO_PID_DIR/search.pid")
	echo "search process after start-up (pid $pid): $(rss "$pid")"
done
if [ -n "${BENCH_PPROF_BASE:-}" ]; then
	curl -fsS -o "$dir/profiles/$tag-search-heap-after-restart.pprof" "$(pprof_url 23 'heap?gc=1')" || true
	echo "search process after the restart's heap profile (pid $pid): $(rss "$pid")"
fi

# Last: a failed or slow verify does not cost the figures above. With
# pprof, 60 s CPU profiles of search and the document service from 5 s in
# (where verify's time goes).
verify_prof=
if [ -n "${BENCH_PPROF_BASE:-}" ]; then
	(sleep 5
	curl -fsS -o "$dir/profiles/$tag-verify-search-cpu.pprof" "$(pprof_url 23 'profile?seconds=60')" &
	curl -fsS -o "$dir/profiles/$tag-verify-document-cpu.pprof" "$(pprof_url 21 'profile?seconds=60')" &
	wait) &
	verify_prof=$!
fi
echo "reindex -verify: starting at $(date -u +%H:%M:%S) (load $(load))"
t0=$(now)
if "$ctl" reindex -verify >"$dir/verify.out" 2>&1; then
	echo "reindex -verify: $(since "$t0") s ($(tail -n 1 "$dir/verify.out"))"
else
	echo "reindex -verify FAILED after $(since "$t0") s:"; tail -n 20 "$dir/verify.out"
fi
echo "reindex -verify: ended at $(date -u +%H:%M:%S) (load $(load))"
if [ -n "$verify_prof" ]; then wait "$verify_prof" || true; echo "profiles: $dir/profiles/$tag-verify-{search,document}-cpu.pprof (60 s of verify from 5 s in)"; fi
