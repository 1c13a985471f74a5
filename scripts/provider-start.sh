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

# shellcheck source=lib/service.sh
. "$repo_root/scripts/lib/service.sh"
service_label=provider-start

# --- The virtual environment, shared by every provider. The migrated-database
# templates (see serve.py) belong to the old packages: a reinstall removes them.
service_ensure_venv "$venv" "$provider_src/requirements.txt" .provider-requirements django-oauth-toolkit \
    "$provider_root"/schema-*.sqlite3

# --- A fresh run folder.
run_dir="$provider_root/$name"
"$repo_root/scripts/provider-stop.sh" --name "$name" >/dev/null
rm -rf "$run_dir"
mkdir -p "$run_dir"

# serve.py binds a free port, migrates, registers the users and clients, writes
# env.sh then env.json, and serves. Ready when env.json exists and the metadata
# document answers 200.
service_start "$run_dir" provider "$venv/bin/python" endpoints.metadata -- \
    "$venv/bin/python" "$provider_src/serve.py" --run-dir "$run_dir" --name "$name" ${serve_args[@]+"${serve_args[@]}"}

echo "provider-start: $name is serving $(sed -n 's/^export PROVIDER_BASE_URL=//p' "$run_dir/env.sh") (pid $service_pid)" >&2
echo "$run_dir/env.sh"
