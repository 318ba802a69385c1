#!/usr/bin/env bash
# scifact_settings.sh: SciFact through the stack, then the same indexed
# corpus scored again with other query-side settings of the search
# process (settings that change no stored vector, e.g. the use embedder's
# DOCREPO_USE_QUERY_*), side by side in one run. Run it under run.sh:
#
#   BENCH_CMD=services/search/bench/scifact_settings.sh \
#   BENCH_SETTINGS='DOCREPO_USE_QUERY_IDF=0 DOCREPO_USE_QUERY_WEIGHT=0.4 DOCREPO_USE_SHORT_QUERY_WEIGHT=0.8' \
#     services/search/bench/run.sh
#
# BENCH_SETTINGS: sets of VAR=value separated by ';'. For each, the search
# binary is wrapped to start with them, the search process is stopped
# (devstack's supervisor starts it again, on the same index) and the
# corpus is scored again (-scifact-state). Arguments go to the bench.
set -euo pipefail
: "${BENCH_BIN:?run under run.sh (BENCH_CMD)}" "${DOCREPO_PID_DIR:?}" "${DOCREPO_URL:?}"
state=$(mktemp /tmp/scifact-state.XXXXXX)
rm -f "$state"
trap 'rm -f "$state"' EXIT
"$BENCH_BIN/bench" -run scifact -scifact-state "$state" "$@"
[ -f "$BENCH_BIN/search.real" ] || mv "$BENCH_BIN/search" "$BENCH_BIN/search.real"
search_cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
IFS=';' read -ra sets <<<"${BENCH_SETTINGS:-}"
for set in "${sets[@]}"; do
	[ -n "${set// /}" ] || continue
	printf '#!/bin/sh\nexec env %s "%s" "$@"\n' "$set" "$BENCH_BIN/search.real" >"$BENCH_BIN/search"
	chmod +x "$BENCH_BIN/search"
	old=$(cat "$DOCREPO_PID_DIR/search.pid")
	kill -TERM "$old"
	# The supervisor starts it again after a back-off; wait for a new pid
	# that answers /readyz.
	for _ in $(seq 1 600); do
		sleep 1
		new=$(cat "$DOCREPO_PID_DIR/search.pid" 2>/dev/null || true)
		if [ -n "$new" ] && [ "$new" != "$old" ] && curl -fsS "http://$DOCREPO_SEARCH_METRICS_ADDR/readyz" >/dev/null 2>&1; then
			break
		fi
	done
	echo
	echo "## search process restarted with: $set"
	pid=$(cat "$DOCREPO_PID_DIR/search.pid")
	before=$(search_cpu "$pid")
	"$BENCH_BIN/bench" -run scifact -scifact-state "$state" "$@"
	# The search process's CPU while scored (its user + system ticks).
	echo "search process CPU while scored: $(( $(search_cpu "$pid") - before )) ticks of 1/$(getconf CLK_TCK) s"
done
