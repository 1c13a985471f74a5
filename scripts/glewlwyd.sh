#!/usr/bin/env bash
# glewlwyd (Debian's package) as a second real OpenID provider, with an
# independent DPoP resource server beside it. See Tests/Glewlwyd/README.md.
#
#   scripts/glewlwyd.sh [--name NAME] start [--tls] | stop | status | selftest
#
# start: installs Debian's glewlwyd when it is missing (and the pinned Python
# packages of Tests/Glewlwyd/requirements.txt into .build/glewlwyd/venv), makes
# a fresh .build/glewlwyd/NAME/ (default NAME: main) with a SQLite database made
# from the package's schema, keys and a throwaway CA, starts glewlwyd on a free
# 127.0.0.1 port behind a front (front.py: it passes requests to glewlwyd one
# at a time, since glewlwyd is not safe under concurrent writes), and the
# resource server (verifier.py), configures glewlwyd through its admin REST API
# (Tests/Glewlwyd/setup.py) and returns once all answer. The front's URL is
# glewlwyd's external URL, the one in its metadata. With --tls the front is
# https (the throwaway CA's certificate for 127.0.0.1, client certificates
# asked for and checked) and fronts the resource server too: everything is
# https there, and mutual TLS (RFC 8705) works. On stdout:
# the path of env.json (also env.sh). Anything left from an earlier start under
# NAME is stopped first; if anything fails, nothing is left running.
# stop: stops what start started (TERM, then KILL after 5 s); the folder stays.
# selftest: checks the running NAME with raw HTTP (Tests/Glewlwyd/selftest.py).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$repo_root/Tests/Glewlwyd"
root="$repo_root/.build/glewlwyd"
venv="$root/venv"

name=main
if [ "${1:-}" = "--name" ]; then
    [ $# -ge 2 ] || { echo "glewlwyd: --name needs a value" >&2; exit 64; }
    name="$2"
    shift 2
fi
if ! [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]] || [ "$name" = venv ]; then
    echo "glewlwyd: --name must be letters, digits, '-' or '_' (and not 'venv')" >&2
    exit 64
fi
run_dir="$root/$name"

die() { echo "glewlwyd: $*" >&2; exit 1; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# True while pid runs; a zombie (killed, not yet reaped) has stopped.
alive() {
    local state
    state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)" || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

stop_pid_file() {
    local file="$1" pid
    [ -f "$file" ] || return 0
    pid="$(cat "$file")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            alive "$pid" || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
}

stop() {
    [ -d "$run_dir" ] || return 0
    stop_pid_file "$run_dir/front.pid"
    stop_pid_file "$run_dir/verifier.pid"
    stop_pid_file "$run_dir/glewlwyd.pid"
}

install_if_missing() {
    command -v glewlwyd >/dev/null 2>&1 && [ -f /usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz ] && return 0
    echo "glewlwyd: installing Debian's glewlwyd package" >&2
    "$repo_root/scripts/ensure-deps.sh" glewlwyd >&2
    command -v glewlwyd >/dev/null 2>&1 || die "the glewlwyd package did not install (apt has it in Debian 12 and later)"
}

# The virtual environment, shared by every NAME: a lock for parallel starts, a
# stamp so that a second start skips pip.
ensure_venv() {
    local stamp="$venv/.requirements" wanted log="$root/pip.log"
    wanted="$(sha256sum "$src/requirements.txt" | cut -d' ' -f1) $(python3 -c 'import sys; print(sys.version.split()[0])')"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && [ -x "$venv/bin/python" ]; then
        return 0
    fi
    echo "glewlwyd: installing the verifier's packages into $venv" >&2
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >"$log" 2>&1 ||
        ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
            -r "$src/requirements.txt" >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        rm -rf "$venv"
        die "installing the verifier's packages failed (python3 and python3-venv are needed)"
    fi
    echo "$wanted" >"$stamp"
}

make_keys() {
    local keys="$run_dir/keys" tls="$run_dir/tls"
    mkdir -p "$keys" "$tls"
    chmod 700 "$keys" "$tls"
    # glewlwyd's token signing key (ES256) and the private_key_jwt client's key.
    openssl ecparam -name prime256v1 -genkey -noout -out "$keys/signing.key" 2>/dev/null
    openssl ec -in "$keys/signing.key" -pubout -out "$keys/signing.pub" 2>/dev/null
    openssl ecparam -name prime256v1 -genkey -noout -out "$keys/client-jwt.key.sec1" 2>/dev/null
    openssl pkcs8 -topk8 -nocrypt -in "$keys/client-jwt.key.sec1" -out "$keys/client-jwt.key"
    rm -f "$keys/client-jwt.key.sec1"
    # A throwaway CA, the front's certificate for 127.0.0.1, a client certificate
    # for the tls_client_auth client (SAN DNS mtls-client.test), another one from
    # the same CA (a different client certificate) and a self-signed one.
    local days=2 ecp=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${ecp[@]}" -days "$days" -subj "/CN=glewlwyd test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$tls/ca.key" -out "$tls/ca.crt" >/dev/null 2>&1
    issue() { # NAME SUBJECT EXTENSIONS
        openssl req "${ecp[@]}" -subj "$2" -keyout "$tls/$1.key" -out "$tls/$1.csr" >/dev/null 2>&1
        printf '%s\n' "$3" >"$tls/$1.ext"
        openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
            -days "$days" -extfile "$tls/$1.ext" -out "$tls/$1.crt" >/dev/null 2>&1
        rm -f "$tls/$1.csr" "$tls/$1.ext"
    }
    issue server "/CN=127.0.0.1" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
    issue client "/CN=mtls-client" "subjectAltName=DNS:mtls-client.test
extendedKeyUsage=clientAuth"
    issue other "/CN=other-client" "subjectAltName=DNS:other-client.test
extendedKeyUsage=clientAuth"
    openssl req -x509 "${ecp[@]}" -days "$days" -subj "/CN=self-signed-client" \
        -addext "subjectAltName=DNS:self-client.test" -addext "extendedKeyUsage=clientAuth" \
        -keyout "$tls/self-client.key" -out "$tls/self-client.crt" >/dev/null 2>&1
    chmod 600 "$keys"/*.key "$tls"/*.key
    for file in "$keys/signing.key" "$keys/signing.pub" "$keys/client-jwt.key" "$tls/ca.crt" "$tls/server.crt" \
        "$tls/client.crt" "$tls/other.crt" "$tls/self-client.crt"; do
        [ -s "$file" ] || die "openssl could not make $file"
    done
}

write_config() {
    local port="$1" external="$2"
    cat >"$run_dir/glewlwyd.conf" <<EOF
# Written by scripts/glewlwyd.sh for one test run.
port=$port
bind_address="127.0.0.1"
external_url="$external"
login_url="login.html"
api_prefix="api"
allow_origin="*"
log_mode="file"
log_level="INFO"
log_file="$run_dir/glewlwyd.log"
cookie_secure=0
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="/usr/lib/glewlwyd/user"
client_module_path="/usr/lib/glewlwyd/client"
user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
plugin_module_path="/usr/lib/glewlwyd/plugin"
hash_algorithm="SHA512"
database =
{
  type = "sqlite3"
  path = "$run_dir/glewlwyd.sqlite3"
};
EOF
}

wait_for() { # URL WHAT PIDFILE
    local deadline=$((SECONDS + 30))
    until python3 - "$1" <<'EOF' 2>/dev/null; do
import ssl, sys, urllib.request
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
try:
    opener.open(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
EOF
        alive "$(cat "$3")" || fail "$2 exited during start"
        [ "$SECONDS" -lt "$deadline" ] || fail "$2 did not answer within 30 seconds"
        sleep 0.1
    done
}

fail() {
    echo "glewlwyd: $1; the end of the logs in $run_dir:" >&2
    tail -n 15 "$run_dir"/*.log >&2 2>/dev/null || true
    exit 1
}

start() {
    install_if_missing
    mkdir -p "$root"
    (
        flock 9
        ensure_venv
    ) 9>"$root/venv.lock"
    stop
    rm -rf "$run_dir"
    mkdir -p "$run_dir"
    chmod 700 "$run_dir"
    trap 'stop' EXIT
    trap 'exit 130' INT TERM HUP

    make_keys
    "$venv/bin/python" - "$run_dir/glewlwyd.sqlite3" <<'EOF' || die "could not make the database"
import gzip, sqlite3, sys
connection = sqlite3.connect(sys.argv[1])
connection.executescript(gzip.open("/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz", "rt").read())
connection.commit()
EOF
    local port resource_port front_port external
    port="$(free_port)"
    resource_port="$(free_port)"
    front_port="$(free_port)"
    external="http://127.0.0.1:$front_port"
    echo "$port" >"$run_dir/port"
    echo "$resource_port" >"$run_dir/resource-port"
    if [ "$tls" = 1 ]; then
        echo "$front_port" >"$run_dir/tls-port"
        external="https://127.0.0.1:$front_port"
    fi
    echo "$external" >"$run_dir/external-url"
    write_config "$port" "$external"

    # Every output into a log and stdin from /dev/null: whoever runs this script
    # is not kept waiting on a pipe.
    glewlwyd --config-file="$run_dir/glewlwyd.conf" </dev/null >"$run_dir/glewlwyd-console.log" 2>&1 &
    echo $! >"$run_dir/glewlwyd.pid"
    local base="http://127.0.0.1:$port"
    local front=()
    [ "$tls" = 1 ] && front=(--behind-front)
    "$venv/bin/python" "$src/verifier.py" --port "$resource_port" --jwks "$base/api/oidc/jwks" "${front[@]}" \
        --issuer "$external/api/oidc" --issuer "$external/api/oidcnonce" --issuer "$external/api/oidcpar" \
        --issuer "$external/api/oidcshort" \
        --downgrade "$base/api/oidc/token" \
        </dev/null >"$run_dir/verifier.log" 2>&1 &
    echo $! >"$run_dir/verifier.pid"
    local tls_dir=()
    [ "$tls" = 1 ] && tls_dir=(--tls-dir "$run_dir/tls")
    "$venv/bin/python" "$src/front.py" --port "$front_port" --glewlwyd "$base" \
        --resource "http://127.0.0.1:$resource_port" "${tls_dir[@]}" \
        </dev/null >"$run_dir/front.log" 2>&1 &
    echo $! >"$run_dir/front.pid"

    wait_for "$base/config/" glewlwyd "$run_dir/glewlwyd.pid"
    wait_for "http://127.0.0.1:$resource_port/test/nonce" "the resource server" "$run_dir/verifier.pid"
    wait_for "$external/healthz" "the front" "$run_dir/front.pid"
    "$venv/bin/python" "$src/setup.py" "$run_dir" >"$run_dir/setup.log" 2>&1 || fail "configuring glewlwyd failed"
    wait_for "$base/api/oidc/.well-known/openid-configuration" "the oidc plugin" "$run_dir/glewlwyd.pid"
    "$venv/bin/python" - "$run_dir/env.json" >"$run_dir/env.sh" <<'EOF'
import json, shlex, sys
env = json.load(open(sys.argv[1]))
print(f"export GLEWLWYD_ENV_JSON={shlex.quote(sys.argv[1])}")
print(f"export GLEWLWYD_ISSUER={shlex.quote(env['issuer'])}")
print(f"export GLEWLWYD_RESOURCE={shlex.quote(env['resource']['base_url'])}")
print(f"export GLEWLWYD_ALICE_PASSWORD={shlex.quote(env['user']['password'])}")
EOF
    chmod 600 "$run_dir/env.sh"
    trap - EXIT
    echo "glewlwyd: $name is serving $external (resource server on port $resource_port)" >&2
    echo "$run_dir/env.json"
}

tls=0
case "${1:-}" in
    start)
        case "${2:-}" in
            "") ;;
            --tls) tls=1 ;;
            *) echo "glewlwyd: start takes only --tls" >&2; exit 64 ;;
        esac
        start ;;
    stop) stop ;;
    status)
        if [ -f "$run_dir/glewlwyd.pid" ] && alive "$(cat "$run_dir/glewlwyd.pid")"; then echo running; else echo stopped; exit 3; fi
        ;;
    selftest)
        [ -f "$run_dir/env.json" ] || die "no $run_dir/env.json: start it first"
        "$venv/bin/python" "$src/selftest.py" "$run_dir/env.json"
        ;;
    *) sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 64 ;;
esac
