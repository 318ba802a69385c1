# cache.sh: what deploy/dev/model.sh and wordnet.sh share, sourced by
# both (not run): the directory of a fetched, verified package appears
# whole or not at all, and `ensure` fails softly (make run) or hard
# (make test).
#
# The sourcing script defines log MESSAGE, complete DIR (is DIR a whole
# unpacking of the pinned version) and install (fetch, verify, unpack,
# then cache_publish; prints the directory), and sets CACHE_WHAT (the
# package and version, for messages), CACHE_WITHOUT (what the stack does
# without it) and CACHE_NEEDED (why it is needed and how to provide it).

# cache_publish STAGE DIR TMP makes STAGE, a complete unpacking beside DIR,
# the directory DIR and prints it. Readable by everyone: the images run as
# a non-root user. An older or broken unpacking of the same name goes
# first (into TMP, the fetch's scratch directory); then the rename makes
# the directory appear whole. Losing a race to another ensure is fine when
# the winner's directory is complete.
cache_publish() {
  local stage=$1 dir=$2 tmp=$3
  chmod 0755 "$stage"
  chmod 0644 "$stage"/*
  if [ -e "$dir" ]; then
    log "replacing the incomplete $dir"
    mv "$dir" "$tmp/old"
  fi
  if ! mv -T "$stage" "$dir" 2>/dev/null && ! complete "$dir"; then
    log "cannot move $CACHE_WHAT into $dir"
    return 1
  fi
  log "$CACHE_WHAT verified and unpacked into $dir"
  echo "$dir"
}

# cache_ensure [--soft] runs install; when it fails, --soft says what the
# stack does without the package and returns 0, else it says how to
# provide it and exits 1.
cache_ensure() {
  local soft=0
  case "${1:-}" in
    --soft) soft=1 ;;
    "") ;;
    *) echo "usage: $0 ensure [--soft]" >&2; exit 2 ;;
  esac
  # install runs in a subshell of its own (its cleanup trap is on EXIT),
  # with errexit in force: not as an if condition, which would switch it off.
  local rc=0
  set +e
  (set -e; install)
  rc=$?
  set -e
  if [ "$rc" = 0 ]; then return 0; fi
  if [ "$soft" = 1 ]; then
    log "$CACHE_WHAT is not available: $CACHE_WITHOUT"
    return 0
  fi
  log "$CACHE_WHAT is needed $CACHE_NEEDED"
  exit 1
}
