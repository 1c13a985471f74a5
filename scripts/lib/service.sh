# Sourced by the scripts that start and stop a local test service written in
# Python (scripts/provider-start.sh, provider-stop.sh, mcp-server.sh, and for
# stopping and liveness apple-provider.sh and entra-provider.sh) and by the
# scripts that test an example package: one virtual environment per service
# kind, a run folder per instance, a server that writes env.json once it is
# set up, and a readiness probe. Each caller that starts a service sets
# `service_label` (the prefix of its messages) before calling these.

# True while pid runs; a zombie (killed, not yet reaped) has stopped.
service_alive() {
    local state
    state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)" || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# True when pid is the service serving run_dir: its command line names run_dir
# and a program matching program_regex (not a reused process id).
#   service_is PID RUN_DIR PROGRAM_REGEX
service_is() {
    [ -r "/proc/$1/cmdline" ] || return 1
    tr '\0' '\n' <"/proc/$1/cmdline" | grep -qxF -- "$2" &&
        tr '\0' '\n' <"/proc/$1/cmdline" | grep -q -- "$3"
}

# TERM, then KILL after 5 seconds.
service_stop_pid() {
    local pid="$1"
    kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while service_alive "$pid" && [ "$waited" -lt 50 ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if service_alive "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
}

# Stops the service whose pid run_dir/pid names, if it is still that service,
# and removes the pid file; service_stopped_pid is then the pid it stopped, or
# empty when none ran. Stopping one that is not running is not an error.
#   service_stop RUN_DIR PROGRAM_REGEX
service_stop() {
    service_stopped_pid=""
    local pid_file="$1/pid"
    [ -f "$pid_file" ] || return 0
    local pid
    pid="$(cat "$pid_file")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && service_is "$pid" "$1" "$2"; then
        service_stop_pid "$pid"
        service_stopped_pid="$pid"
    fi
    rm -f "$pid_file"
}

# Installs requirements into venv unless its stamp says they are there for this
# python3. A lock, because tests may start several services at once; the stamp,
# so a second start skips pip. On a reinstall, extra paths are removed too.
#   service_ensure_venv VENV REQUIREMENTS STAMP_NAME WHAT [EXTRA_PATH...]
service_ensure_venv() {
    local venv="$1" requirements="$2" what="$4"
    local stamp="$venv/$3"
    shift 4
    local root
    root="$(dirname "$venv")"
    mkdir -p "$root"
    (
        flock 9
        local wanted
        wanted="$(sha256sum "$requirements" | cut -d' ' -f1) $(python3 -c 'import sys; print(sys.version.split()[0])')"
        if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && [ -x "$venv/bin/python" ]; then
            exit 0
        fi
        echo "$service_label: installing $what into $venv" >&2
        rm -rf "$venv" "$@"
        local log="$root/pip.log"
        if ! python3 -m venv "$venv" >"$log" 2>&1 ||
            ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
                -r "$requirements" >>"$log" 2>&1; then
            echo "$service_label: installing $what failed (python3 and python3-venv are needed):" >&2
            tail -n 20 "$log" >&2
            rm -rf "$venv"
            exit 1
        fi
        echo "$wanted" >"$stamp"
    ) 9>"$root/venv.lock"
}

# Starts COMMAND... in the background with stdin from /dev/null and every
# output into run_dir/server.log (whoever runs the script is not kept waiting
# on a pipe), writes run_dir/pid, and returns once run_dir/env.json exists and
# the URL at URL_KEY in it (dotted: endpoints.metadata) answers 200. On failure it stops the server, says why with the end
# of the log, and exits 1; so does an interrupt. Sets service_pid.
#   service_start RUN_DIR WHAT PYTHON URL_KEY -- COMMAND...
service_start() {
    local run_dir="$1" what="$2" python="$3" url_key="$4"
    shift 5
    service_pid=""
    # shellcheck disable=SC2064 # run_dir is fixed now, on purpose.
    trap "service_cleanup_on_failure '$run_dir'" EXIT
    trap 'exit 130' INT TERM HUP
    "$@" </dev/null >"$run_dir/server.log" 2>&1 &
    service_pid=$!
    echo "$service_pid" >"$run_dir/pid"

    local deadline=$((SECONDS + 60))
    until [ -f "$run_dir/env.json" ]; do
        service_alive "$service_pid" || service_fail "$run_dir" "the $what exited during setup"
        [ "$SECONDS" -lt "$deadline" ] || service_fail "$run_dir" "the $what did not finish its setup within 60 seconds"
        sleep 0.1
    done
    "$python" - "$run_dir/env.json" "$url_key" "$service_label" <<'EOF' || service_fail "$run_dir" "the $what does not answer"
import json, sys, time, urllib.request
url = json.load(open(sys.argv[1]))
for key in sys.argv[2].split("."):
    url = url[key]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
deadline = time.monotonic() + 20
while True:
    try:
        with opener.open(url, timeout=5) as response:
            if response.status == 200:
                break
    except OSError as error:
        if time.monotonic() > deadline:
            sys.exit(f"{sys.argv[3]}: {url}: {error}")
        time.sleep(0.1)
EOF
    trap - EXIT
}

service_cleanup_on_failure() {
    if [ -n "$service_pid" ] && service_alive "$service_pid"; then
        service_stop_pid "$service_pid"
    fi
    rm -f "$1/pid"
}

# service_fail RUN_DIR MESSAGE
service_fail() {
    echo "$service_label: $2; the end of $1/server.log:" >&2
    tail -n 20 "$1/server.log" >&2
    exit 1
}

# Whether an env.json describes a service whose process is alive.
#   service_env_alive ENV_JSON
service_env_alive() {
    [ -f "$1" ] || return 1
    local pid
    pid="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' "$1" 2>/dev/null)" || return 1
    kill -0 "$pid" 2>/dev/null
}

# For the scripts that test an example package: keeps VARIABLE when it names
# the env.json of a running provider (`make test` sets it); otherwise starts
# provider NAME, exports VARIABLE as its env.json and adds NAME to
# service_started_providers, which the caller's exit trap stops
# (service_stop_started_providers). Needs repo_root.
#   service_use_provider VARIABLE NAME [provider-start.sh arguments]
service_started_providers=()
service_use_provider() {
    local variable="$1" name="$2"
    shift 2
    local current="${!variable:-}"
    if [ -n "$current" ] && service_env_alive "$current"; then
        return 0
    fi
    "$repo_root/scripts/provider-start.sh" --name "$name" "$@" >/dev/null
    service_started_providers+=("$name")
    export "$variable=$repo_root/.build/provider/$name/env.json"
}

service_stop_started_providers() {
    local name
    for name in "${service_started_providers[@]}"; do
        "$repo_root/scripts/provider-stop.sh" --name "$name" >/dev/null 2>&1 || true
    done
}
