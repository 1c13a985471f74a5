#!/usr/bin/env bash
# Stops a local OAuth 2.0 provider started by scripts/provider-start.sh.
#
#   scripts/provider-stop.sh [--name NAME | --all]
#
# NAME defaults to main; --all stops every provider under .build/provider/.
# TERM first, KILL after 5 seconds. Stopping one that is not running is not an
# error. The run folder (and its server.log) stays for inspection.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
provider_root="$repo_root/.build/provider"

names=()
all=0
while [ $# -gt 0 ]; do
    case "$1" in
        --name) [ $# -ge 2 ] || { echo "provider-stop: --name needs a value" >&2; exit 64; }; names+=("$2"); shift 2 ;;
        --all) all=1; shift ;;
        -h|--help) sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 64 ;;
        *) echo "provider-stop: unknown argument: $1" >&2; exit 64 ;;
    esac
done
if [ "$all" = 1 ]; then
    names=()
    for pid_file in "$provider_root"/*/pid; do
        [ -f "$pid_file" ] || continue
        names+=("$(basename "$(dirname "$pid_file")")")
    done
elif [ "${#names[@]}" -eq 0 ]; then
    names=(main)
fi

# shellcheck source=lib/service.sh
. "$repo_root/scripts/lib/service.sh"
service_label=provider-stop

for name in ${names[@]+"${names[@]}"}; do
    if ! [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]]; then
        echo "provider-stop: not a provider name: $name" >&2
        exit 64
    fi
    service_stop "$provider_root/$name" 'serve\.py$'
    if [ -n "$service_stopped_pid" ]; then
        echo "provider-stop: stopped $name (pid $service_stopped_pid)" >&2
    fi
done
