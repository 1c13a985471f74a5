#!/usr/bin/env bash
# Runs `swift test` with the given arguments, its output as it comes, and when
# the run fails, repeats what failed at the very end: the failing tests and
# their recorded issues (swift-testing's ✘ and ↳ lines), XCTest's errors and
# ThreadSanitizer's reports. A CI log is often read from its tail, and a run of
# 900 tests puts the one that failed thousands of lines above it.
#
#   SWIFT=swift scripts/swift-test.sh [swift test arguments]
#
# The whole output is kept in .build/swift-test.log (the last run's).
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
swift="${SWIFT:-swift}"
log="$repo_root/.build/swift-test.log"
mkdir -p "$repo_root/.build"

"$swift" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo
    echo "swift-test: the run failed (exit $status); what failed, from $log:"
    # A recorded issue is a ✘ line that says where; its comments follow as ↳
    # lines. A test's own ✘ line says only "failed"; TSan's report starts with
    # WARNING and ends with SUMMARY.
    awk '
        /✘/ || /: error: / || / failed \(/ { print; keep = 1; next }
        /WARNING: ThreadSanitizer/ { print; tsan = 40; next }
        tsan > 0 { print; tsan--; if ($0 ~ /^SUMMARY:/) tsan = 0; next }
        keep && /↳/ { print; next }
        { keep = 0 }
    ' "$log" | head -n 200
fi
exit "$status"
