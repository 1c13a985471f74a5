#!/bin/sh
# swift format, with the checked-in .swift-format, over every tracked Swift
# file but generated code: `scripts/check-format.sh` fails on any difference
# (make lint, so make test); `scripts/check-format.sh --fix` rewrites in place.
set -eu
cd "$(dirname "$0")/.."
SWIFT="${SWIFT:-swift}"
files=$(git ls-files -co --exclude-standard '*.swift' | grep -v '/Generated/' || true)
if [ "${1:-}" = "--fix" ]; then
    # shellcheck disable=SC2086
    exec "$SWIFT" format format --in-place --configuration .swift-format $files
fi
# shellcheck disable=SC2086
if ! "$SWIFT" format lint --strict --configuration .swift-format $files; then
    echo "check-format: run scripts/check-format.sh --fix (or make format)" >&2
    exit 1
fi
