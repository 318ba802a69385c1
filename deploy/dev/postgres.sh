#!/usr/bin/env bash
# Private PostgreSQL clusters for development and tests, from the system's
# PostgreSQL binaries (installed from Debian packages when absent).
#
#   postgres.sh ensure DATADIR PORT   start (initdb first if needed) a cluster
#                                     on 127.0.0.1:PORT; prints its URL
#   postgres.sh stop DATADIR          stop it
#   postgres.sh test-url              print the URL of a server for the tests:
#                                     $DOCREPO_TEST_DATABASE_URL, else the
#                                     local server on 127.0.0.1:5432 when one
#                                     answers, else a private cluster
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then
    echo "$d"
    return 0
  fi
  return 1
}

install_binaries() {
  if bindir >/dev/null; then return 0; fi
  log "PostgreSQL binaries not found; installing the Debian postgresql package"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
  bindir >/dev/null || { log "installing postgresql did not provide initdb"; exit 1; }
}

# as_owner runs a command as the cluster owner: PostgreSQL refuses to run as
# root, so root delegates to the postgres system user.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

ensure() {
  local datadir=$1 port=$2 bin
  install_binaries
  bin=$(bindir)
  mkdir -p "$datadir"
  datadir=$(cd "$datadir" && pwd)
  if [ "$(id -u)" = 0 ]; then chown postgres: "$datadir"; chmod 700 "$datadir"; fi
  local running=""
  if [ -f "$datadir/PG_VERSION" ] && as_owner "$bin/pg_ctl" -D "$datadir" status >/dev/null 2>&1; then running=1; fi
  if [ -z "$running" ] && port_open "$port"; then
    log "port $port is taken by another process"; exit 1
  fi
  if [ ! -f "$datadir/PG_VERSION" ]; then
    log "initialising a cluster in $datadir"
    as_owner "$bin/initdb" -D "$datadir" --username=postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  fi
  if [ -z "$running" ]; then
    as_owner "$bin/pg_ctl" -D "$datadir" -l "$datadir/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $datadir -c fsync=off -c max_connections=300" start >/dev/null
  fi
  echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

stop() {
  local datadir=$1 bin
  bin=$(bindir) || exit 0
  [ -f "$datadir/PG_VERSION" ] || exit 0
  as_owner "$bin/pg_ctl" -D "$datadir" -m fast -w stop >/dev/null 2>&1 || true
}

test_url() {
  if [ -n "${DOCREPO_TEST_DATABASE_URL:-}" ]; then
    echo "$DOCREPO_TEST_DATABASE_URL"; return
  fi
  if port_open 5432; then
    echo "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"; return
  fi
  local dir
  if [ "$(id -u)" = 0 ]; then dir=/var/tmp/docrepo-pgtest; else dir="${XDG_CACHE_HOME:-$HOME/.cache}/docrepo/pgtest"; fi
  ensure "$dir" 55433
}

case "${1:-}" in
  ensure) ensure "${2:?DATADIR}" "${3:?PORT}" ;;
  stop) stop "${2:?DATADIR}" ;;
  test-url) test_url ;;
  *) echo "usage: $0 ensure DATADIR PORT | stop DATADIR | test-url" >&2; exit 2 ;;
esac
