#!/usr/bin/env bash
# Princeton WordNet 3.0, the thesaurus the use embedder expands short
# queries with (synonyms, abbreviations: pkg/embed/wordnet), for
# development, tests and images: Debian's wordnet-base package at the
# version pinned below, downloaded with the ordinary apt client
# (`apt-get download`, no installation, no root needed when the package
# lists are there), checked against the sha256 pinned here, and unpacked
# with dpkg-deb into a cache directory. No conversion: the Go reader
# reads WordNet's own files.
#
#   wordnet.sh ensure [--soft]   fetch, verify and unpack when absent; print
#                                the directory. --soft (make run): when that
#                                fails (no apt, no network, checksum
#                                mismatch) say so and exit 0 printing
#                                nothing: queries are then not expanded
#   wordnet.sh dir               print the directory (present or not)
#   wordnet.sh verify FILE       check FILE against the pinned sha256
#
# The directory is $DOCREPO_MODELS_DIR/wordnet-3.0-37 (default
# DOCREPO_MODELS_DIR: .data/models in the repository), beside the sentence
# encoder's. It holds index.*, data.*, *.exc and cntlist.rev (28 MB), the
# package's copyright file as LICENSE (the WordNet 3.0 licence: use, copy,
# modify and distribute with the notice) and SOURCE. It appears whole or
# not at all (staged beside it, then renamed).
#
# DOCREPO_WORDNET_DEB=FILE uses that .deb (e.g. copied from a machine with
# network) instead of apt; it is verified all the same.
set -euo pipefail

PACKAGE=wordnet-base
VERSION=1:3.0-37
# sha256 of wordnet-base_3.0-37_all.deb as Debian bookworm's archive
# serves it (apt-get download wordnet-base=1:3.0-37; sha256sum).
SHA256=61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752
NAME=wordnet-3.0-37
FILES=(index.noun index.verb index.adj index.adv data.noun data.verb data.adj data.adv
  noun.exc verb.exc adj.exc adv.exc cntlist.rev)
WITHOUT="queries are not expanded with synonyms"

log() { echo "wordnet.sh: $*" >&2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/dev/cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
CACHE_WHAT="$PACKAGE=$VERSION"
CACHE_WITHOUT=$WITHOUT
CACHE_NEEDED="(the tests of pkg/embed read it); run on Debian with apt, or set DOCREPO_WORDNET_DEB"

wn_dir() { echo "${DOCREPO_MODELS_DIR:-$repo/.data/models}/$NAME"; }

source_line() { echo "deb $PACKAGE=$VERSION sha256:$SHA256"; }

verify() {
  local file=$1 got
  [ -f "$file" ] || { log "$file: no such file"; return 1; }
  got=$(sha256sum "$file" | cut -d ' ' -f 1)
  if [ "$got" != "$SHA256" ]; then
    log "$file is not $PACKAGE=$VERSION: its sha256 is $got, the pinned one $SHA256; refusing it"
    return 1
  fi
}

complete() {
  local dir=$1 f
  [ -f "$dir/SOURCE" ] && [ "$(cat "$dir/SOURCE")" = "$(source_line)" ] || return 1
  for f in "${FILES[@]}" LICENSE; do [ -s "$dir/$f" ] || return 1; done
}

# fetch puts the .deb into TMPDIR and prints its path.
fetch() {
  local tmp=$1 deb
  if [ -n "${DOCREPO_WORDNET_DEB:-}" ]; then
    echo "$DOCREPO_WORDNET_DEB"
    return
  fi
  command -v apt-get >/dev/null 2>&1 || { log "apt-get is not there (a Debian system fetches $PACKAGE; elsewhere set DOCREPO_WORDNET_DEB)"; return 1; }
  log "fetching $PACKAGE=$VERSION with apt-get download (6.5 MB, once)"
  # A fresh machine has no package lists: update them once (root only).
  if ! (cd "$tmp" && apt-get download -qq "$PACKAGE=$VERSION" </dev/null >&2 2>/dev/null); then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq >&2 || true
    elif command -v sudo >/dev/null 2>&1; then
      sudo apt-get update -qq >&2 || true
    fi
    (cd "$tmp" && apt-get download -qq "$PACKAGE=$VERSION" </dev/null >&2) ||
      { log "apt-get download $PACKAGE=$VERSION failed"; return 1; }
  fi
  deb=$(ls "$tmp"/"$PACKAGE"_*.deb 2>/dev/null | head -n 1)
  [ -n "$deb" ] && [ -f "$deb" ] || { log "apt-get download wrote no .deb"; return 1; }
  echo "$deb"
}

install() {
  local dir parent tmp deb stage f
  dir=$(wn_dir)
  if complete "$dir"; then
    echo "$dir"
    return 0
  fi
  command -v dpkg-deb >/dev/null 2>&1 || { log "dpkg-deb is not there (Debian's dpkg unpacks the package)"; return 1; }
  parent=$(dirname "$dir")
  mkdir -p "$parent"
  tmp=$(mktemp -d "$parent/.fetch.XXXXXX")
  # _apt downloads into it when run as root.
  chmod 0777 "$tmp"
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  deb=$(fetch "$tmp") || return 1
  verify "$deb" || return 1
  stage=$tmp/$NAME
  mkdir -p "$tmp/x" "$stage"
  dpkg-deb -x "$deb" "$tmp/x" || { log "$deb: dpkg-deb cannot unpack it"; return 1; }
  for f in "${FILES[@]}"; do
    [ -s "$tmp/x/usr/share/wordnet/$f" ] || { log "$deb has no usr/share/wordnet/$f"; return 1; }
    mv "$tmp/x/usr/share/wordnet/$f" "$stage/$f"
  done
  [ -s "$tmp/x/usr/share/doc/$PACKAGE/copyright" ] || { log "$deb has no copyright file"; return 1; }
  mv "$tmp/x/usr/share/doc/$PACKAGE/copyright" "$stage/LICENSE"
  source_line >"$stage/SOURCE"
  cache_publish "$stage" "$dir" "$tmp"
}

case "${1:-}" in
  ensure) shift; cache_ensure "$@" ;;
  dir) wn_dir ;;
  verify) [ $# -eq 2 ] || { echo "usage: $0 verify FILE" >&2; exit 2; }; verify "$2" ;;
  *) echo "usage: $0 ensure [--soft] | dir | verify FILE" >&2; exit 2 ;;
esac
