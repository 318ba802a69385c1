#!/usr/bin/env bash
# OCR programs for development and tests: Tesseract with its English data
# (plus the languages of DOCREPO_OCR_LANGS) and poppler's pdftoppm, from
# Debian packages when absent.
#
#   ocr.sh ensure    install what is missing (apt-get update first), then
#                    print the tesseract version line
set -euo pipefail

log() { echo "ocr.sh: $*" >&2; }

# packages lists the Debian packages that are needed and not installed.
packages() {
  local need=() lang
  command -v tesseract >/dev/null 2>&1 || need+=(tesseract-ocr)
  command -v pdftoppm >/dev/null 2>&1 || need+=(poppler-utils)
  local installed=""
  if command -v tesseract >/dev/null 2>&1; then
    installed=$(tesseract --list-langs 2>/dev/null | tail -n +2 || true)
  fi
  # Tesseract's language "chi_sim" is the Debian package tesseract-ocr-chi-sim.
  local langs=${DOCREPO_OCR_LANGS:-eng}
  for lang in eng ${langs//+/ }; do
    [[ "$lang" =~ ^[A-Za-z][A-Za-z0-9_]*$ ]] || { log "DOCREPO_OCR_LANGS: $lang is not a language name"; exit 1; }
    if ! grep -qx "$lang" <<<"$installed"; then
      need+=("tesseract-ocr-${lang//_/-}")
    fi
  done
  printf '%s\n' "${need[@]}" | sort -u | grep -v '^$' || true
}

ensure() {
  local need
  need=$(packages)
  if [ -n "$need" ]; then
    log "installing Debian packages: $(echo $need)"
    local sudo=""
    if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
    $sudo apt-get update -qq >&2
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $need >&2
  fi
  command -v tesseract >/dev/null && command -v pdftoppm >/dev/null || { log "tesseract or pdftoppm still missing"; exit 1; }
  tesseract --version 2>/dev/null | head -n 1
}

case "${1:-}" in
  ensure) ensure ;;
  *) echo "usage: $0 ensure" >&2; exit 2 ;;
esac
