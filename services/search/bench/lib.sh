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
# pkg/client; asked once, fails while the gateway or search is down).
total() { "$bench" -run total; }
