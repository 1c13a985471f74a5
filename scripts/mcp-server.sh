#!/usr/bin/env bash
# Starts or stops the MCP server of the MCP example's test (Tests/MCPServer):
# the official Python MCP SDK serving one tool on 127.0.0.1, protected by a
# local provider (scripts/provider-start.sh), which it asks about every token.
#
#   scripts/mcp-server.sh start [--name NAME] [--provider ENV_JSON] [--scope SCOPE]...
#   scripts/mcp-server.sh stop [--name NAME]
#
# NAME defaults to main, ENV_JSON to .build/provider/main/env.json (the provider
# `make test` starts), SCOPE to read. start installs the pinned SDK into
# .build/mcp/venv when missing, stops a server already running under NAME,
# starts a new one and returns once its RFC 9728 document answers; then
# .build/mcp/NAME/env.json describes it (url, resource, resource_metadata, pid)
# and its path is printed on stdout. If anything fails, nothing is left running.
# stop sends TERM, then KILL after 5 s; stopping one that is not running is not
# an error.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
server_src="$repo_root/Tests/MCPServer"
mcp_root="$repo_root/.build/mcp"
venv="$mcp_root/venv"

usage() {
    sed -n '5,6p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2
    exit 64
}
[ $# -ge 1 ] || usage
command="$1"
shift
name=main
provider="$repo_root/.build/provider/main/env.json"
scope_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --name) [ $# -ge 2 ] || usage; name="$2"; shift 2 ;;
        --provider) [ $# -ge 2 ] || usage; provider="$2"; shift 2 ;;
        --scope) [ $# -ge 2 ] || usage; scope_args+=(--scope "$2"); shift 2 ;;
        -h|--help) usage ;;
        *) echo "mcp-server: unknown argument: $1" >&2; usage ;;
    esac
done
if ! [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]] || [ "$name" = venv ]; then
    echo "mcp-server: --name must be letters, digits, '-' or '_' (and not 'venv')" >&2
    exit 64
fi
run_dir="$mcp_root/$name"

# shellcheck source=lib/service.sh
. "$repo_root/scripts/lib/service.sh"
service_label=mcp-server

stop() { service_stop "$run_dir" 'MCPServer/server\.py$'; }

case "$command" in
    stop) stop; exit 0 ;;
    start) ;;
    *) usage ;;
esac

if [ ! -f "$provider" ]; then
    echo "mcp-server: no provider at $provider (scripts/provider-start.sh starts one)" >&2
    exit 1
fi
# --- The virtual environment, shared by every server.
service_ensure_venv "$venv" "$server_src/requirements.txt" .mcp-requirements "the MCP SDK"

stop
rm -rf "$run_dir"
mkdir -p "$run_dir"

service_start "$run_dir" server "$venv/bin/python" resource_metadata -- \
    "$venv/bin/python" "$server_src/server.py" --provider-env "$provider" --run-dir "$run_dir" \
    ${scope_args[@]+"${scope_args[@]}"}

echo "mcp-server: $name is serving $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$run_dir/env.json") (pid $service_pid)" >&2
echo "$run_dir/env.json"
