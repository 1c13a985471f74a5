#!/usr/bin/env bash
# Installs what the build and the tests need when it is missing, on Debian or Ubuntu:
# libcurl's headers (the transport), python3 with venv (the test servers and the
# local OAuth provider), openssl (test certificates) and git (make lint's list of
# files; the credential helper tests run it).
set -euo pipefail

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
for extra in "$@"; do
    command -v "$extra" >/dev/null 2>&1 || missing+=("$extra")
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "ensure-deps: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

command -v swift >/dev/null 2>&1 || {
    echo "ensure-deps: swift is not on PATH; install a Swift 6 toolchain from swift.org" >&2
    exit 1
}
