#!/usr/bin/env bash
# Runs Tests/Provider/browser.py (the scripted user's browser) with the
# provider's Python; see that file for its arguments. Needs the virtual
# environment that scripts/provider-start.sh installs.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$repo_root/.build/provider/venv/bin/python"
if [ ! -x "$python" ]; then
    echo "provider-browser: no $python; run scripts/provider-start.sh first" >&2
    exit 2
fi
exec "$python" "$repo_root/Tests/Provider/browser.py" "$@"
