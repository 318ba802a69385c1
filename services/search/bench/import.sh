#!/usr/bin/env bash
# import.sh: the bulk-import benchmark of issue 13. It writes IMPORT_FILES
# small text files (default 100000, in 100 directories) to a temporary
# directory, imports them with `docrepoctl import` as a new user, kills the
# import with SIGKILL when about half is done, runs the same command again,
# and prints documents/s of each run and the final count of documents and
# folders (which must be exactly the files and directories).
#
# It runs against a fresh stack started by run.sh:
#   BENCH_CMD=services/search/bench/import.sh bash services/search/bench/run.sh
set -euo pipefail
n=${IMPORT_FILES:-100000}
ctl="$BENCH_BIN/docrepoctl"
dir=$(mktemp -d /tmp/docrepo-import.XXXXXX)
state="$dir.state"
trap 'rm -rf "$dir" "$state"' EXIT

echo "import: writing $n files under $dir" >&2
awk -v n="$n" -v d="$dir" 'BEGIN {
	for (i = 0; i < 100 && i < n; i++) system(sprintf("mkdir -p %s/d%03d", d, i))
	for (i = 0; i < n; i++) {
		f = sprintf("%s/d%03d/f%06d.txt", d, i % 100, i)
		printf "imported file %d: quarterly report %d for account %d, reviewed and filed\n", i, i % 97, i * 7 > f
		close(f)
	}
}'
user="importer$(date +%s)"
"$ctl" user create "$user" --groups "$user" >/dev/null
token=$("$ctl" key create "$user" --scopes documents_read,documents_write)
export DOCREPO_TOKEN="$token"

echo "import: first run, killed with SIGKILL at about $((n / 2)) files" >&2
now() { date +%s.%N; }
t0=$(now)
"$ctl" import -state "$state" "$dir" >/dev/null 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
	if [ -f "$state" ] && [ "$(wc -l <"$state")" -ge $((n / 2)) ]; then kill -KILL "$pid"; break; fi
	sleep 0.2
done
wait "$pid" 2>/dev/null || true
t1=$(now)
count() { psql -At -d "$DATABASE_URL" -c "SELECT count(*) FROM document.documents WHERE entry_person = '$user'"; }
killed_at=$(count)
echo "import: killed; $killed_at documents; resuming" >&2
"$ctl" import -state "$state" "$dir" >"$dir.summary" 2>/dev/null
t2=$(now)
docs=$(count)
distinct=$(psql -At -d "$DATABASE_URL" -c "SELECT count(DISTINCT description) FROM document.documents WHERE entry_person = '$user'")
folders=$(psql -At -d "$DATABASE_URL" -c "SELECT count(*) FROM folder.folders WHERE created_by = (SELECT id FROM identity.users WHERE username = '$user')")
awk -v n="$n" -v k="$killed_at" -v d="$docs" -v u="$distinct" -v f="$folders" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
	printf "\n## docrepoctl import of %d small files in 100 directories, SIGKILL halfway, then resumed\n", n
	printf "first run: %d documents in %.1f s before the kill: %.0f documents/s\n", k, t1 - t0, k / (t1 - t0)
	printf "resume: %d more in %.1f s: %.0f documents/s\n", d - k, t2 - t1, (d - k) / (t2 - t1)
	printf "overall: %.0f documents/s\n", d / (t2 - t0)
	printf "result: %d documents (%d distinct) for %d files; %d folders for 100 directories\n", d, u, n, f
}'
rm -f "$dir.summary"
