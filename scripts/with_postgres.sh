#!/usr/bin/env bash
# Run a command with a throwaway PostgreSQL server for the tests, then stop it.
#
# Usage: scripts/with_postgres.sh COMMAND [ARGS...]
#
# The server lives in a fresh temporary directory (data, socket, log), listens on a Unix socket
# in that directory and on a free loopback port, and is removed when COMMAND ends. COMMAND
# runs with ACCORD_TEST_POSTGRES_URL pointing at an empty database `accord_test` on it.
#
# - ACCORD_TEST_POSTGRES_URL already set: used as it is, nothing is started.
# - PostgreSQL's binaries are looked for under /usr/lib/postgresql/*/bin and on PATH; in CI
#   (CI=true) they are installed with apt when missing, and a server that does not start fails
#   the run. Outside CI, without binaries, COMMAND runs without a server and the PostgreSQL
#   tests skip, saying why.
# - PostgreSQL refuses to run as root: as root the server runs as the `postgres` user (created
#   by the Debian package), otherwise as the current user.
set -euo pipefail

if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi

if [[ -n "${ACCORD_TEST_POSTGRES_URL:-}" ]]; then
    exec "$@"
fi

find_bindir() {
    local candidate
    for candidate in /usr/lib/postgresql/*/bin; do
        if [[ -x "$candidate/initdb" && -x "$candidate/pg_ctl" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

BINDIR="$(find_bindir || true)"
if [[ -z "$BINDIR" && "${CI:-}" == "true" && "$(id -u)" == "0" ]]; then
    echo "with_postgres: installing PostgreSQL with apt" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    BINDIR="$(find_bindir || true)"
fi
if [[ -z "$BINDIR" ]]; then
    if [[ "${CI:-}" == "true" ]]; then
        echo "with_postgres: no PostgreSQL binaries found, and CI needs them" >&2
        exit 1
    fi
    echo "with_postgres: no PostgreSQL binaries found; the PostgreSQL tests will skip" >&2
    exec "$@"
fi

RUN_AS=()
if [[ "$(id -u)" == "0" ]]; then
    RUN_AS=(runuser -u postgres --)
fi

TMP="$(mktemp -d -t accord-pg.XXXXXX)"
chmod 755 "$TMP"
if [[ "$(id -u)" == "0" ]]; then
    chown postgres "$TMP"
fi

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"

stop_server() {
    "${RUN_AS[@]}" "$BINDIR/pg_ctl" -D "$TMP/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap stop_server EXIT

"${RUN_AS[@]}" "$BINDIR/initdb" -D "$TMP/data" -U postgres -A trust -E UTF8 --no-locale --no-sync >"$TMP/initdb.log" 2>&1 || {
    cat "$TMP/initdb.log" >&2
    echo "with_postgres: initdb failed" >&2
    exit 1
}
"${RUN_AS[@]}" "$BINDIR/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $TMP -c max_connections=200" start >/dev/null || {
    cat "$TMP/server.log" >&2
    echo "with_postgres: the server did not start" >&2
    exit 1
}
"${RUN_AS[@]}" "$BINDIR/createdb" -h "$TMP" -p "$PORT" -U postgres accord_test

export ACCORD_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$PORT/accord_test"
# The tests that restart the server under a running store need to know where it is.
export ACCORD_TEST_POSTGRES_CTL="$BINDIR/pg_ctl"
export ACCORD_TEST_POSTGRES_DATA="$TMP/data"
export ACCORD_TEST_POSTGRES_RUN_AS="${RUN_AS[*]}"
echo "with_postgres: PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT" >&2

set +e
"$@"
status=$?
set -e
exit $status
