#!/usr/bin/env bash
# The oauth2 CLI against a local provider (django-oauth-toolkit), step by step.
#
#   scripts/demo.sh            the browser step is played by scripts/provider-browser.sh
#   PASTE=1 scripts/demo.sh    you open the URL, sign in and paste the redirect yourself
#
# Builds the CLI, starts a provider named "demo" on 127.0.0.1, signs alice in
# with `oauth2 authorize` (OpenID Connect: the ID token is verified), shows
# `oauth2 token --format json` and `oauth2 userinfo`, calls /api/me with `oauth2 call`,
# signs out (printing the provider's end-session URL), then stops the provider. The narration goes to stderr; what
# the CLI prints on stdout is shown as it is.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
swift="${SWIFT:-swift}"

# Bold and dim only on a terminal, and never with NO_COLOR set.
if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' dim=$'\033[2m' plain=$'\033[0m'; else bold="" dim="" plain=""; fi
say() { printf '\n%sdemo:%s %s\n' "$bold" "$plain" "$*" >&2; }
show() { printf '%s$ %s%s\n' "$dim" "$*" "$plain" >&2; }

say "building the oauth2 CLI ($swift build --product oauth2)"
"$swift" build --product oauth2 >&2
oauth2="$("$swift" build --show-bin-path)/oauth2"

say "starting a local OAuth 2.0 provider (django-oauth-toolkit; the first time installs it, ~20 s)"
work="$(mktemp -d)"
trap 'scripts/provider-stop.sh --name demo >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
env_sh="$(scripts/provider-start.sh --name demo)"
# shellcheck disable=SC1090
. "$env_sh"
echo "  provider: $PROVIDER_BASE_URL (issuer $PROVIDER_ISSUER)" >&2

say "configuring the CLI through OAUTH2_* variables: a confidential client, its secret in a file, a private token store; the issuer, whose OpenID configuration gives the endpoints"
printf '%s\n' "$PROVIDER_CONFIDENTIAL_CLIENT_SECRET" >"$work/client-secret"
chmod 600 "$work/client-secret"
export OAUTH2_CLIENT_ID="$PROVIDER_CONFIDENTIAL_CLIENT_ID"
export OAUTH2_CLIENT_SECRET_FILE="$work/client-secret"
export OAUTH2_ISSUER="$PROVIDER_ISSUER"
export OAUTH2_SCOPE="openid profile email read write"
export OAUTH2_STORE="$work/store"
unset OAUTH2_CLIENT_SECRET OAUTH2_STORE_KEY OAUTH2_ACCOUNT OAUTH2_AUTHORIZE_URL OAUTH2_TOKEN_URL OAUTH2_REVOKE_URL
env | grep '^OAUTH2_' | sort | sed 's/^/  /' >&2

if [ -n "${PASTE:-}" ] && [ "${PASTE}" != 0 ]; then
    say "signing in: open the URL below in a browser on this machine, sign in as alice (password: $PROVIDER_ALICE_PASSWORD), approve, and paste the address the browser lands on"
    show "oauth2 authorize"
    "$oauth2" authorize
else
    say "signing in: oauth2 authorize prints the authorize URL (its first line of stdout) and waits for the redirect on stdin"
    show "oauth2 authorize"
    # Its stderr (instructions, the prompt) is shown once it is done, so that it
    # does not interleave with the browser's step.
    coproc AUTHORIZE { "$oauth2" authorize 2>"$work/authorize.stderr"; }
    authorize_pid=$AUTHORIZE_PID
    if ! IFS= read -r url <&"${AUTHORIZE[0]}"; then
        wait "$authorize_pid" || true
        cat "$work/authorize.stderr" >&2
        exit 1
    fi
    printf '%s\n' "$url"
    say "the browser (scripts/provider-browser.sh) opens it, signs in as alice and approves; the provider redirects to:"
    redirect="$(scripts/provider-browser.sh "$url" --username alice --password="$PROVIDER_ALICE_PASSWORD")"
    printf '  %s\n' "$(printf '%s' "$redirect" | sed 's/code=[^&]*/code=…/')" >&2
    say "pasting that redirect into oauth2 authorize; what it said on stderr:"
    printf '%s\n' "$redirect" >&"${AUTHORIZE[1]}"
    eval "exec ${AUTHORIZE[1]}>&-"
    status=0
    wait "$authorize_pid" || status=$?
    cat "$work/authorize.stderr" >&2
    [ "$status" -eq 0 ] || exit "$status"
fi

say "what is stored: the token's metadata and who signed in (the verified ID token's claims), never the tokens"
show "oauth2 token --format json"
"$oauth2" token --format json

say "asking the provider who signed in (OpenID Connect userinfo; its sub must be the ID token's)"
show "oauth2 userinfo"
"$oauth2" userinfo

say "calling the provider's API with the token"
show "oauth2 call $PROVIDER_API_ME_URL"
"$oauth2" call "$PROVIDER_API_ME_URL"
echo

say "signing out (revokes at the provider, deletes the stored token, prints the provider's end-session URL for the browser)"
show "oauth2 logout"
# The end-session URL carries the ID token as id_token_hint: shown shortened here, as the code is above.
"$oauth2" logout | sed 's/id_token_hint=[^&]*/id_token_hint=…/'

say "done; stopping the provider"
