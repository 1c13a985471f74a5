#!/usr/bin/env bash
# Checks a running local provider's self-configuring side (issue 38: RFC 9728
# metadata and challenges, registration, client ID metadata documents, RFC 8707
# resources, step-up, the hostile resources) with raw HTTP, not with our Swift
# library: Tests/Provider/selftest.py, with the provider's Python. A failure
# here is the witness's, not the client's.
#
#   scripts/provider-selftest.sh [--name NAME]      (default NAME: main)
#
# One line per check, then `N passed, N failed`; exit status 1 when a check
# failed, 64 on a usage error. It registers clients and signs alice in.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=main
if [ "${1:-}" = "--name" ]; then
    [ $# -ge 2 ] || { echo "provider-selftest: --name needs a value" >&2; exit 64; }
    name="$2"
    shift 2
fi
[ $# -eq 0 ] || { sed -n '8p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 64; }
python="$repo_root/.build/provider/venv/bin/python"
env_json="$repo_root/.build/provider/$name/env.json"
[ -x "$python" ] || { echo "provider-selftest: no $python; run scripts/provider-start.sh first" >&2; exit 1; }
[ -f "$env_json" ] || { echo "provider-selftest: no $env_json; run scripts/provider-start.sh --name $name first" >&2; exit 1; }
exec "$python" "$repo_root/Tests/Provider/selftest.py" "$env_json"
