#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests of the PostgreSQL token store.
#
#   scripts/postgres.sh [--name NAME] start | stop | halt | restart | status
#
# start: installs Debian's postgresql package when it is missing, makes a new
# cluster NAME (main by default) with password (SCRAM) login for user oauth2
# and a database oauth2_test, and starts it on a free 127.0.0.1 port, TCP
# only, TLS offered (a certificate for 127.0.0.1 that is its own CA, ca.crt).
# When it returns 0 the server answers, and .build/postgres/NAME/env.sh and
# env.json say where: OAUTH2_IT_POSTGRES_URL (no password in it),
# OAUTH2_IT_POSTGRES_PASSWORD_FILE and OAUTH2_IT_POSTGRES_CA_FILE.
# What the server itself reads and writes (its data and log) is in a private
# directory of its own under /tmp (0700, owned by the server's user, made per
# cluster and removed by stop), not under the clone: run as root, the server
# runs as nobody (PostgreSQL refuses to run as root), and nobody cannot reach
# a clone under a directory others cannot search, such as root's home.
# stop: stops it at once and removes its directory (a running cluster is
# stopped before a new start).
# halt: stops it at once and keeps its directory, for restart.
# restart: stops it at once (when running) and starts the same cluster on the
# same port (the tests of what a client sees while the database is away).
# Stopping one that is not running is not an error.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=main
if [ "${1:-}" = "--name" ]; then
    [ $# -ge 2 ] || { echo "postgres: --name needs a value" >&2; exit 64; }
    name="$2"
    shift 2
fi
case "$name" in
    "" | *[!A-Za-z0-9_-]*) echo "postgres: a cluster's name is letters, digits, _ and -" >&2; exit 64 ;;
esac
root="$repo_root/.build/postgres/$name"
# The server's private directory, recorded in $root/server-dir by start.
server_dir=""
if [ -f "$root/server-dir" ]; then
    server_dir="$(cat "$root/server-dir")"
    # Only ever a directory this script made: it is removed with rm -rf.
    case "$server_dir" in
        /tmp/oauth2-postgres-*) ;;
        *) server_dir="" ;;
    esac
fi
data="$server_dir/data"
log="$server_dir/server.log"
# A cluster an older version of this script made kept its data under $root.
if [ -z "$server_dir" ] && [ -d "$root/data" ]; then
    server_dir="$root"
    data="$root/data"
    log="$root/server.log"
fi

die() { echo "postgres: $*" >&2; exit 1; }

bin_dir() {
    local initdb
    initdb="$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 || true)"
    [ -n "$initdb" ] && dirname "$initdb"
}

install_if_missing() {
    [ -n "$(bin_dir)" ] && return 0
    echo "postgres: installing Debian's postgresql package" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # The package's own cluster is not used: policy-rc.d keeps it from starting.
    $sudo apt-get install -y -qq --no-install-recommends postgresql >&2
    [ -n "$(bin_dir)" ] || die "the postgresql package did not install initdb"
}

# Runs a PostgreSQL program as the cluster's owner (from /: the owner may
# not be allowed into the clone, and every path given is absolute).
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd / && runuser -u "$(cat "$root/owner")" -- "$@")
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

stop_server() {
    [ -n "$server_dir" ] && [ -f "$data/postmaster.pid" ] || return 0
    local bin
    bin="$(bin_dir)"
    as_owner "$bin/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
}

# Stops the server and removes its private directory.
stop() {
    stop_server
    if [ -n "$server_dir" ] && [ "$server_dir" != "$root" ]; then
        rm -rf "$server_dir"
        rm -f "$root/server-dir"
    fi
}

start_server() {
    local bin port
    bin="$(bin_dir)"
    port="$(cat "$root/port")"
    # Without the descriptors this script inherited: a test process that
    # starts the server has sockets and files open, which the server would
    # hold for its lifetime, and PostgreSQL refuses to start when they leave
    # it fewer than it needs ("insufficient file descriptors", seen with
    # about 960 inherited under make test).
    as_owner python3 -c 'import os, sys; os.closerange(3, os.sysconf("SC_OPEN_MAX")); os.execvp(sys.argv[1], sys.argv[1:])' \
        "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories= -c fsync=off -c max_connections=200 -c ssl=on" \
        start >/dev/null || { tail -20 "$log" >&2 || true; die "the server did not start (log: $log)"; }
}

start() {
    install_if_missing
    stop
    rm -rf "$root"
    mkdir -p "$root"
    chmod 700 "$root"
    local owner
    owner="$(id -un)"
    if [ "$(id -u)" -eq 0 ]; then
        owner=nobody
    fi
    echo "$owner" > "$root/owner"
    python3 -c 'import secrets; print(secrets.token_urlsafe(24))' > "$root/password"
    chmod 600 "$root/password"
    # mktemp makes it 0700 for its maker; the server's user gets it.
    server_dir="$(mktemp -d /tmp/oauth2-postgres-"$name".XXXXXXXX)"
    echo "$server_dir" > "$root/server-dir"
    data="$server_dir/data"
    log="$server_dir/server.log"
    # initdb reads the password from a file its user can read; only for the moment it runs.
    local pwfile="$server_dir/initdb-password"
    cp "$root/password" "$pwfile"
    mkdir -p "$data"
    if [ "$(id -u)" -eq 0 ]; then
        chown "$owner" "$server_dir" "$data" "$pwfile"
        as_owner test -w "$data" \
            || die "user $owner cannot write $data (is /tmp mounted so that it cannot?)"
    fi
    chmod 700 "$data"
    local bin
    bin="$(bin_dir)"
    as_owner "$bin/initdb" -D "$data" -U oauth2 --pwfile="$pwfile" -A scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$root/initdb.log" 2>&1 \
        || { rm -f "$pwfile"; cat "$root/initdb.log" >&2; die "initdb failed"; }
    rm -f "$pwfile"
    # TLS, for the tests of sslmode: a certificate for 127.0.0.1 that is its
    # own CA (ca.crt beside env.sh); plain TCP is still accepted.
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$data/server.key" -out "$data/server.crt" >/dev/null 2>&1 || die "openssl could not make the server certificate"
    cp "$data/server.crt" "$root/ca.crt"
    chmod 600 "$data/server.key"
    if [ "$(id -u)" -eq 0 ]; then chown "$owner" "$data/server.key" "$data/server.crt"; fi
    free_port > "$root/port"
    start_server
    local port url
    port="$(cat "$root/port")"
    PGPASSWORD="$(cat "$root/password")" "$bin/psql" -h 127.0.0.1 -p "$port" -U oauth2 -d postgres -q -v ON_ERROR_STOP=1 \
        -c "CREATE DATABASE oauth2_test" >/dev/null || die "could not create the test database"
    url="postgresql://oauth2@127.0.0.1:$port/oauth2_test"
    cat > "$root/env.sh" <<EOF
export OAUTH2_IT_POSTGRES_URL='$url'
export OAUTH2_IT_POSTGRES_PASSWORD_FILE='$root/password'
export OAUTH2_IT_POSTGRES_CA_FILE='$root/ca.crt'
EOF
    printf '{"url": "%s", "password_file": "%s"}\n' "$url" "$root/password" > "$root/env.json"
    echo "postgres: serving $url (data in $data)" >&2
    echo "$root/env.sh"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    halt) stop_server ;;
    restart)
        [ -f "$root/port" ] && [ -n "$server_dir" ] || die "no cluster to restart; start one first"
        stop_server
        start_server
        ;;
    status)
        [ -n "$server_dir" ] && [ -f "$data/postmaster.pid" ] && as_owner "$(bin_dir)/pg_ctl" -D "$data" status >/dev/null && echo running || { echo stopped; exit 3; }
        ;;
    *) sed -n '4p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 64 ;;
esac
