#!/usr/bin/env bash
# alternate.sh: search binaries side by side on a kept stack (run.sh with
# BENCH_KEEP=1, after scale.sh imported SCALE_DOCS documents): for each of
# ALT_ROUNDS rounds (default 2), each binary in turn replaces the search
# binary, the search process is restarted with SIGTERM (the supervisor
# starts the new one), and after ALT_SETTLE_S seconds (default 8) the perf
# probe runs the modes ALT_MODES (comma-separated name prefixes, default
# "FTS prefix,FTS NEAR") on the same data. Used for issue 23's 1 M passes
# (scale-1m-2026-11-27c.md); stop other CPU users first (the numbers are
# the slowest queries of 100).
#
#   set -a; . $work/stack.env; set +a
#   ALT_MODES="FTS AND,FTS OR,FTS prefix,FTS + highlights" \
#     bash services/search/bench/alternate.sh /tmp/search-new /tmp/search-old
set -euo pipefail
n=${SCALE_DOCS:-1000000}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
dir=${SCALE_DIR:-/tmp/docrepo-scale-$n}
search_pid() { cat "$DOCREPO_PID_DIR/search.pid"; }
# shellcheck disable=SC1091
. "$dir/scale.env"
export DOCREPO_TOKEN="$token"
folders=$(psql -At -d "$DATABASE_URL" -c "SELECT string_agg(id::text, ',' ORDER BY name) FROM folder.folders WHERE created_by = (SELECT id FROM identity.users WHERE username = '$user')")
[ $# -ge 1 ] || { echo "usage: alternate.sh SEARCH_BINARY..." >&2; exit 2; }
for round in $(seq 1 "${ALT_ROUNDS:-2}"); do
	for bin in "$@"; do
		cp "$bin" "$BENCH_BIN/search.new" && mv -f "$BENCH_BIN/search.new" "$BENCH_BIN/search"
		before=$(total)
		pid=$(search_pid)
		kill -TERM "$pid"
		wait_back search_pid "$pid" "$before"
		sleep "${ALT_SETTLE_S:-8}"
		echo "## round $round, $bin ($(date -u +%T), load $(load))"
		"$bench" -run probe -docs "$n" -folders "$folders" -queries "${ALT_QUERIES:-100}" \
			-probe-modes "${ALT_MODES:-FTS prefix,FTS NEAR}" 2>&1 | grep -E '^(FTS|vector|metadata|folder)'
	done
done
