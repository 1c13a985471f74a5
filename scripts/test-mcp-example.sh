#!/usr/bin/env bash
# Builds and tests the MCP example, Examples/MCPClient (a package of its own,
# so the root package never pulls the MCP Swift SDK or SwiftNIO).
#
#   scripts/test-mcp-example.sh [extra `swift test` arguments]
#
# Its witness test needs the MCP server of Tests/MCPServer (the official Python
# MCP SDK) in front of a local provider. It uses the provider named by
# OAUTH2_IT_PROVIDER (an env.json path; `make test` sets it), or starts one of
# its own (mcp-example) when the variable is unset or names a provider that is
# not running; then it starts two MCP servers (scripts/mcp-server.sh, names
# mcp-example and mcp-example-b) against it, sets OAUTH2_IT_MCP_SERVER and
# OAUTH2_IT_MCP_SERVER_B, and stops on exit what it started.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
swift="${SWIFT:-swift}"
started_server=0
# shellcheck source=lib/service.sh
. "$repo_root/scripts/lib/service.sh"

cleanup() {
    if [ "$started_server" = 1 ]; then
        "$repo_root/scripts/mcp-server.sh" stop --name mcp-example >/dev/null 2>&1 || true
        "$repo_root/scripts/mcp-server.sh" stop --name mcp-example-b >/dev/null 2>&1 || true
    fi
    service_stop_started_providers
}
trap cleanup EXIT
trap 'exit 130' INT TERM

service_use_provider OAUTH2_IT_PROVIDER mcp-example
provider="$OAUTH2_IT_PROVIDER"
started_server=1
OAUTH2_IT_MCP_SERVER="$("$repo_root/scripts/mcp-server.sh" start --name mcp-example --provider "$provider")"
# A second MCP server behind the same provider: two resources, two tokens.
OAUTH2_IT_MCP_SERVER_B="$("$repo_root/scripts/mcp-server.sh" start --name mcp-example-b --provider "$provider")"
export OAUTH2_IT_MCP_SERVER OAUTH2_IT_MCP_SERVER_B
# The witness suite skips without a server; here it must run.
export MCP_EXAMPLE_REQUIRE_SERVER=1

cd "$repo_root/Examples/MCPClient"
"$swift" build --build-tests
"$swift" test "$@"
