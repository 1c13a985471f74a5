#!/usr/bin/env bash
# Installs what the build and the tests need when it is missing, on Debian or Ubuntu:
# libcurl's headers (the transport), python3 with venv (the test servers and the
# local OAuth provider), openssl (test certificates) and git (make lint's list of
# files; the credential helper tests run it).
#
#     ensure-deps.sh [COMMAND[=PACKAGE]]...
#
# also installs PACKAGE (by default the command's own name) for each COMMAND not
# on PATH: `make test` asks for kubectl=kubernetes-client (Debian's kubectl, for
# the test that runs a real one) and, run as root, nft=nftables (the PostgreSQL
# lock test whose holder's network goes silent: only root can silence it). A PACKAGE that apt does not know here is left
# out with a note, and the test that needs the command skips, saying so.
set -euo pipefail

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

missing=()
pkg-config --exists libcurl 2>/dev/null || missing+=(libcurl4-openssl-dev pkg-config)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
else
    missing+=(python3-venv)
fi
extras=()
for extra in "$@"; do
    command -v "${extra%%=*}" >/dev/null 2>&1 || extras+=("${extra#*=}")
done

if [ "${#missing[@]}" -gt 0 ] || [ "${#extras[@]}" -gt 0 ]; then
    $sudo apt-get update -qq
    for package in "${extras[@]}"; do
        if apt-cache show "$package" >/dev/null 2>&1; then
            missing+=("$package")
        else
            echo "ensure-deps: apt has no $package here; left out" >&2
        fi
    done
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "ensure-deps: installing ${missing[*]}" >&2
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

command -v swift >/dev/null 2>&1 || {
    echo "ensure-deps: swift is not on PATH; install a Swift 6 toolchain from swift.org" >&2
    exit 1
}
