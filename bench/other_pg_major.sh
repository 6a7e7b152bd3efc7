#!/bin/sh
# Run plans unchanged on "a machine with another PostgreSQL major version" (issue 11): in a private mount
# namespace, /usr/lib/postgresql is replaced by a tmpfs holding only <MAJOR>/bin, whose programs are links to
# another PostgreSQL build (e.g. the PostgreSQL 16 that the PyPI package `pgserver` ships). The Debian 15 build
# is invisible inside; nothing outside the namespace changes, and the tmpfs goes with the namespace.
#
#   sh bench/other_pg_major.sh PG_BIN_DIR STORE PLAN [fairmark run options…]
#
# e.g. python3 -m venv /tmp/pg16 && /tmp/pg16/bin/pip install pgserver==0.1.4
#      sh bench/other_pg_major.sh /tmp/pg16/lib/python3.11/site-packages/pgserver/pginstall/bin \
#         /tmp/pg16.db plans/seeds/4-pgbench-restart.toml --quick
# Root is needed (unshare -m, mount). Prints the major it installed, then fairmark's own output.
set -eu
bin=$(realpath "$1"); store=$2; plan=$3; shift 3
major=$("$bin/postgres" --version | sed -n 's/.* \([0-9][0-9]*\)\.[0-9].*/\1/p')
[ -n "$major" ] || { echo "cannot tell the major version of $bin/postgres" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
exec unshare -m --propagation private sh -eu -c '
  bin=$1 major=$2 here=$3 store=$4 plan=$5; shift 5
  mount -t tmpfs -o mode=755 fairmark-pg /usr/lib/postgresql
  mkdir -p "/usr/lib/postgresql/$major/bin"
  for f in "$bin"/*; do ln -s "$f" "/usr/lib/postgresql/$major/bin/"; done
  echo "PostgreSQL here: $(ls /usr/lib/postgresql) ($("/usr/lib/postgresql/$major/bin/postgres" --version))"
  cd "$here"
  exec .venv/bin/fairmark run "$plan" --store "$store" "$@"
' sh "$bin" "$major" "$here" "$store" "$plan" "$@"
