#!/usr/bin/env bash
# patroni.sh makes sure the Patroni members' real components are on the
# machine: Debian's patroni (3.0.2 on bookworm, with its Python 3
# dependencies) and PostgreSQL 15 (postgresql, postgresql-15). They come
# from Debian's packages, not the Go module proxy: apt-get installs them
# when they are missing (as root, or through sudo), and the versions are
# checked either way. Prints the Patroni and PostgreSQL binaries' paths on
# stdout; progress on stderr. Idempotent.
set -euo pipefail

PATRONI_WANT=${PATRONI_WANT:-3.0.}
PG_MAJOR=${PG_MAJOR:-15}
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin

log() { printf 'patroni.sh: %s\n' "$*" >&2; }
die() { printf 'patroni.sh: FAILED: %s\n' "$*" >&2; exit 1; }

have() { command -v patroni >/dev/null 2>&1 && [ -x "$PG_BIN/postgres" ] && [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ]; }

if ! have; then
  log "installing Debian's patroni and postgresql-$PG_MAJOR (apt-get)"
  SUDO=
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "patroni and postgresql-$PG_MAJOR are missing; run as root or install them: apt-get install -y patroni postgresql-$PG_MAJOR"
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  # The package index of a fresh machine may be missing or stale.
  if ! $SUDO apt-get install -y -q --no-install-recommends patroni "postgresql-$PG_MAJOR" >&2; then
    $SUDO apt-get update -q >&2
    $SUDO apt-get install -y -q --no-install-recommends patroni "postgresql-$PG_MAJOR" >&2
  fi
  have || die "apt-get ran but patroni or $PG_BIN is still missing"
fi

v=$(patroni --version 2>&1 | awk '{print $2}')
case "$v" in
  "$PATRONI_WANT"*) ;;
  *) die "patroni $v found; hactl's Patroni members are pinned to Debian bookworm's $PATRONI_WANT*" ;;
esac
pgv=$("$PG_BIN/postgres" --version | awk '{print $3}')
case "$pgv" in
  "$PG_MAJOR".*) ;;
  *) die "PostgreSQL $pgv found in $PG_BIN; want $PG_MAJOR.x" ;;
esac
id postgres >/dev/null 2>&1 || die "the postgres user is missing (Debian's postgresql-common creates it)"
log "patroni $v, PostgreSQL $pgv"
command -v patroni
echo "$PG_BIN"
