# lib.sh: what the shell benchmarks run on run.sh's stack share (scale.sh,
# memory.sh source it). Needs BENCH_BIN (run.sh sets it with BENCH_CMD);
# defines ctl and bench (the binaries) and the helpers below.
# shellcheck shell=bash
ctl="$BENCH_BIN/docrepoctl"
bench="$BENCH_BIN/bench"
now() { date +%s.%N; }
# since T: seconds since T (a now), one decimal.
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# export_corpus N DIR: writes N documents of the benchmark's synthetic
# corpus under DIR (100 directories, .meta.json side-files) for
# `docrepoctl import`.
export_corpus() { "$bench" -run export -docs "$1" -export-dir "$2" >&2; }
# new_user PREFIX: creates the user PREFIX<unix seconds> in a group of its
# own, with a key that reads, writes and searches documents; sets user and
# token and exports the key as DOCREPO_TOKEN.
new_user() {
	user="$1$(date +%s)"
	"$ctl" user create "$user" --groups "$user" >/dev/null
	token=$("$ctl" key create "$user" --scopes documents_read,documents_write,search)
	export DOCREPO_TOKEN="$token"
}
# total: how many documents search sees for DOCREPO_TOKEN's user (through
# pkg/client; asked once, fails while the gateway or search is down, and
# when the answer is not a count, e.g. from a kept stack's older bench
# binary that has no -run total).
total() {
	local t
	t=$("$bench" -run total) || return 1
	case "$t" in
	'' | *[!0-9]*)
		echo "total: $bench -run total answered '$t', not a count" >&2
		return 1
		;;
	esac
	echo "$t"
}
# wait_back PIDFN PID BEFORE: waits until PIDFN (a command printing the
# search process's pid) names a process other than PID and search answers
# BEFORE documents again; gives up after BENCH_WAIT_S seconds (default
# 600) with a message instead of waiting for ever.
wait_back() {
	local deadline=$((SECONDS + ${BENCH_WAIT_S:-600}))
	while [ "$($1)" = "$2" ] || [ "$(total 2>/dev/null || echo 0)" != "$3" ]; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "wait_back: search (pid $2 before) not answering $3 documents after ${BENCH_WAIT_S:-600} s" >&2
			return 1
		fi
		sleep 0.2
	done
}
