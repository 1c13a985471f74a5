#!/usr/bin/env bash
# Starts a local OAuth 2.0 provider (django-oauth-toolkit) on 127.0.0.1 for the
# integration tests and the demo. See Tests/Provider/README.md.
#
#   scripts/provider-start.sh [--name NAME] [--access-token-lifetime SECONDS]
#                             [--no-iss] [--device-interval SECONDS]
#                             [--reuse-protection] [--grace-period SECONDS]
#                             [--jwks-max-age SECONDS] [--logout-deletes-tokens]
#                             [--cimd-ca-file PATH]
#
# Installs the provider into .build/provider/venv when missing (python3 with
# venv is all it needs), makes a fresh run folder .build/provider/NAME/ (default
# NAME: main) and starts the server on a free port. When it returns 0 the
# provider answers, and .build/provider/NAME/env.sh and env.json describe it.
# On stdout: the path of env.sh. A provider already running under NAME is
# stopped first. If anything fails, nothing is left running.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
provider_src="$repo_root/Tests/Provider"
provider_root="$repo_root/.build/provider"
venv="$provider_root/venv"

name=main
serve_args=()
usage() {
    sed -n '5,9p' "${BASH_SOURCE[0]}" | sed 's/^#  *//; s/^#//' >&2
    exit 64
}
while [ $# -gt 0 ]; do
    case "$1" in
        --name) [ $# -ge 2 ] || usage; name="$2"; shift 2 ;;
        --access-token-lifetime|--device-interval)
            [ $# -ge 2 ] || usage
            if ! [[ "$2" =~ ^[1-9][0-9]{0,8}$ ]]; then
                echo "provider-start: $1 needs a positive number of seconds" >&2
                exit 64
            fi
            serve_args+=("$1" "$2"); shift 2 ;;
        --grace-period|--jwks-max-age)
            [ $# -ge 2 ] || usage
            if ! [[ "$2" =~ ^(0|[1-9][0-9]{0,8})$ ]]; then
                echo "provider-start: $1 needs a non-negative whole number of seconds" >&2
                exit 64
            fi
            serve_args+=("$1" "$2"); shift 2 ;;
        --no-iss|--reuse-protection|--logout-deletes-tokens) serve_args+=("$1"); shift ;;
        --cimd-ca-file)
            # serve.py resolves a relative path against this directory.
            [ $# -ge 2 ] && [ -n "$2" ] || usage
            serve_args+=("$1" "$(realpath -m -- "$2")"); shift 2 ;;
        -h|--help) usage ;;
        *) echo "provider-start: unknown argument: $1" >&2; usage ;;
    esac
done
# The name becomes a folder name and part of variable-free paths: keep it plain.
if ! [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]] || [ "$name" = venv ]; then
    echo "provider-start: --name must be letters, digits, '-' or '_' (and not 'venv')" >&2
    exit 64
fi

mkdir -p "$provider_root"

# --- The virtual environment, shared by every provider. A lock, because tests
# may start several providers at once; a stamp, so a second start skips pip.
ensure_venv() {
    local stamp="$venv/.provider-requirements"
    local wanted
    wanted="$(sha256sum "$provider_src/requirements.txt" | cut -d' ' -f1) $(python3 -c 'import sys; print(sys.version.split()[0])')"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && [ -x "$venv/bin/python" ]; then
        return 0
    fi
    echo "provider-start: installing django-oauth-toolkit into $venv" >&2
    # The migrated-database templates (see serve.py) belong to the old packages.
    rm -rf "$venv" "$provider_root"/schema-*.sqlite3
    local log="$provider_root/pip.log"
    if ! python3 -m venv "$venv" >"$log" 2>&1 ||
        ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
            -r "$provider_src/requirements.txt" >>"$log" 2>&1; then
        echo "provider-start: installing the provider failed (python3 and python3-venv are needed):" >&2
        tail -n 20 "$log" >&2
        rm -rf "$venv"
        return 1
    fi
    echo "$wanted" >"$stamp"
}
(
    flock 9
    ensure_venv
) 9>"$provider_root/venv.lock"

# --- A fresh run folder.
run_dir="$provider_root/$name"
"$repo_root/scripts/provider-stop.sh" --name "$name" >/dev/null
rm -rf "$run_dir"
mkdir -p "$run_dir"

# True while pid runs; a zombie (killed, not yet reaped) has stopped.
alive() {
    local state
    state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)" || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

pid=""
cleanup_on_failure() {
    if [ -n "$pid" ] && alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; do
            alive "$pid" || break
            sleep 0.2
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$run_dir/pid"
}
trap 'cleanup_on_failure' EXIT
trap 'exit 130' INT TERM HUP

# serve.py binds a free port, migrates, registers the users and clients, writes
# env.sh then env.json, and serves. stdin from /dev/null and every output into
# the log, so that whoever runs this script is not kept waiting on a pipe.
"$venv/bin/python" "$provider_src/serve.py" --run-dir "$run_dir" --name "$name" ${serve_args[@]+"${serve_args[@]}"} \
    </dev/null >"$run_dir/server.log" 2>&1 &
pid=$!
echo "$pid" >"$run_dir/pid"

fail() {
    echo "provider-start: $1; the end of $run_dir/server.log:" >&2
    tail -n 20 "$run_dir/server.log" >&2
    exit 1
}

# --- Ready when env.json exists and the metadata document answers 200.
deadline=$((SECONDS + 60))
until [ -f "$run_dir/env.json" ]; do
    alive "$pid" || fail "the provider exited during setup"
    [ "$SECONDS" -lt "$deadline" ] || fail "the provider did not finish its setup within 60 seconds"
    sleep 0.1
done
"$venv/bin/python" - "$run_dir/env.json" <<'EOF' || fail "the provider does not answer"
import json, sys, time, urllib.request
url = json.load(open(sys.argv[1]))["endpoints"]["metadata"]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
deadline = time.monotonic() + 20
while True:
    try:
        with opener.open(url, timeout=5) as response:
            if response.status == 200:
                break
    except OSError as error:
        if time.monotonic() > deadline:
            sys.exit(f"provider-start: {url}: {error}")
        time.sleep(0.1)
EOF

trap - EXIT
echo "provider-start: $name is serving $(sed -n 's/^export PROVIDER_BASE_URL=//p' "$run_dir/env.sh") (pid $pid)" >&2
echo "$run_dir/env.sh"
