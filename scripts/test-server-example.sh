#!/usr/bin/env bash
# Builds and tests the Hummingbird example, Examples/SignInServer (a package of
# its own, so the root package never pulls Hummingbird).
#
#   scripts/test-server-example.sh [extra `swift test` arguments]
#
# Its integration tests need two local providers (Tests/Provider/README.md),
# given as env.json paths in OAUTH2_IT_PROVIDER (tokens valid an hour) and
# OAUTH2_IT_SHORT_PROVIDER (tokens valid 2 seconds). When a variable is unset,
# or names a provider that is not running, this script starts one of its own
# (signin-example, signin-example-short) and stops it on exit.
# The several-instances tests need a PostgreSQL, given as OAUTH2_IT_POSTGRES_URL
# and OAUTH2_IT_POSTGRES_PASSWORD_FILE (`make test` sets them); when the URL is
# unset this script starts one (scripts/postgres.sh) and stops it on exit.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
swift="${SWIFT:-swift}"
started_postgres=0
# shellcheck source=lib/service.sh
. "$repo_root/scripts/lib/service.sh"

cleanup() {
    service_stop_started_providers
    if [ "$started_postgres" = 1 ]; then
        "$repo_root/scripts/postgres.sh" stop >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

service_use_provider OAUTH2_IT_PROVIDER signin-example
service_use_provider OAUTH2_IT_SHORT_PROVIDER signin-example-short --access-token-lifetime 2
if [ -z "${OAUTH2_IT_POSTGRES_URL:-}" ]; then
    started_postgres=1
    # start prints the path of the env.sh it wrote.
    postgres_env="$("$repo_root/scripts/postgres.sh" start)"
    . "$postgres_env"
fi
# The suites skip without providers or a database; here they must run.
export SIGNIN_REQUIRE_PROVIDER=1

cd "$repo_root/Examples/SignInServer"
"$swift" build --build-tests
"$swift" test "$@"
