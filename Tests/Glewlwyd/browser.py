"""Plays the user's browser against glewlwyd (the same arguments as Tests/Provider/browser.py).

Authorization code flow:

    browser.py AUTHORIZE_URL --username alice --password P [--deny] [--follow]

glewlwyd's login page is a JavaScript application; this script does what it
does through the same REST API: it signs the user in (`POST /api/auth/`, a
cookie session), grants the client the scopes the request asks for
(`PUT /api/auth/grant/CLIENT_ID`), then opens the authorization URL with
`g_continue` (the login application's "continue") and prints on stdout the URL
glewlwyd redirects to (the client's redirect URI with code, state and iss),
without going there; with --follow it then GETs that URL too (for a loopback
listener) and fails if that request fails. For a request by reference (PAR,
`request_uri`) the client and scope are read from the login page glewlwyd
redirects to first.

--deny: glewlwyd has no "refuse" button: the user signs in and takes the grant
away (`PUT /api/auth/grant/CLIENT_ID` with no scope) before continuing.
glewlwyd 2.7.5 then keeps the user on its login page and never redirects to
the client with `access_denied` (exit status 1, saying so) -- except that
`openid` alone needs no grant there: a request for `openid` only still gets a
code.

Device flow (RFC 8628 §3.3):

    browser.py --device VERIFICATION_URL [--user-code CODE] --username alice --password P

Signs in, grants the device's client its scopes, submits the user code
(`/device?code=...&g_continue`) and prints "authorized" (glewlwyd redirects to
its login page with prompt=deviceComplete). glewlwyd has no way to refuse a
device code: --deny with --device is a usage error.

--ca FILE: the CA to trust for https (a glewlwyd started with --tls; its
env.json's "browser" command says it already).

Exit status: 0 on success; 1 when a step fails (a message on stderr); 2 on a
usage error; 3 when --follow's request got an HTTP error status; 4 when it did
not complete.
"""

import argparse
import json
import ssl
import sys
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

MAX_STEPS = 12
TIMEOUT = 30


class StepFailed(Exception):
    """A step of the browser flow went wrong; the message says which and why."""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def origin(url):
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, port


class Browser:
    def __init__(self, username, password, deny, ca=None):
        self.username = username
        self.password = password
        self.deny = deny
        # Never a proxy from the environment: everything is on 127.0.0.1.
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(CookieJar()), NoRedirect(),
            urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca)))
        self.signed_in_at = None

    def request(self, method, url, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            response = self.opener.open(request, timeout=TIMEOUT)
            return response.status, dict(response.headers), response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read().decode(errors="replace")
        except OSError as error:
            raise StepFailed(f"{method} {url} failed: {error}") from None

    def api_base(self, url):
        """glewlwyd's API root: the part of the plugin URL before /<plugin>/..."""
        parts = urlsplit(url)
        segments = parts.path.split("/")
        if "api" not in segments:
            raise StepFailed(f"{url} is not a glewlwyd plugin URL (no /api/ in its path)")
        prefix = "/".join(segments[: segments.index("api") + 1])
        return urlunsplit((parts.scheme, parts.netloc, prefix, "", ""))

    def sign_in(self, url):
        api = self.api_base(url)
        if self.signed_in_at == api:
            return api
        status, _, text = self.request("POST", f"{api}/auth/", {"username": self.username, "password": self.password})
        if status != 200:
            raise StepFailed(f"login as {self.username!r} failed (HTTP {status}): {text[:200]}")
        self.signed_in_at = api
        return api

    def grant(self, api, client_id, scope):
        granted = "" if self.deny else " ".join(scope.split())
        status, _, text = self.request("PUT", f"{api}/auth/grant/{client_id}", {"scope": granted})
        if status != 200:
            raise StepFailed(f"granting {scope!r} to {client_id} failed (HTTP {status}): {text[:200]}")

    @staticmethod
    def with_continue(url):
        parts = urlsplit(url)
        query = parts.query + ("&" if parts.query else "") + "g_continue"
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))

    def authorize(self, authorize_url):
        """Runs the code flow's browser part; returns the Location sent to the client."""
        provider = origin(authorize_url)
        api = self.sign_in(authorize_url)
        query = parse_qs(urlsplit(authorize_url).query)
        client_id = query.get("client_id", [None])[0]
        scope = query.get("scope", [None])[0]
        if client_id and scope:
            self.grant(api, client_id, scope)
            granted = True
        else:
            granted = False  # a request by reference: the login page's URL names them
        url = self.with_continue(authorize_url) if granted else authorize_url
        for _ in range(MAX_STEPS):
            status, headers, text = self.request("GET", url)
            location = headers.get("Location")
            if status in (301, 302, 303, 307, 308) and location:
                target = urljoin(url, location)
                if origin(target) != provider:
                    return location
                login = urlsplit(target)
                if login.path.endswith("/login.html"):
                    # glewlwyd wants its login application: do what it would.
                    params = parse_qs(login.query)
                    if granted:
                        if self.deny:
                            raise StepFailed("refused: glewlwyd keeps the user on its login page and sends "
                                             "the client nothing (it has no access_denied answer)")
                        error = params.get("prompt", [""])[0] or "the login page came back"
                        raise StepFailed(f"glewlwyd sent the browser back to its login page ({error}): "
                                         f"{target[:300]}")
                    client_id = params.get("client_id", [client_id])[0]
                    scope = params.get("scope", [scope])[0]
                    callback = params.get("callback_url", [None])[0]
                    if not (client_id and scope and callback):
                        raise StepFailed(f"glewlwyd's login page URL names no client, scope or callback: {target[:300]}")
                    self.grant(api, client_id, scope)
                    granted = True
                    url = self.with_continue(callback)
                    continue
                url = target
                continue
            raise StepFailed(f"glewlwyd answered HTTP {status} instead of redirecting: {' '.join(text.split())[:400]}")
        raise StepFailed(f"no redirect to the client after {MAX_STEPS} steps")

    def approve_device(self, verification_url, user_code):
        """Runs the device flow's browser part; returns "authorized"."""
        api = self.sign_in(verification_url)
        parts = urlsplit(verification_url)
        query = parse_qs(parts.query)
        code = user_code or query.get("code", [None])[0] or query.get("user_code", [None])[0]
        if not code:
            raise StepFailed("the verification URL carries no user code: pass --user-code")
        # glewlwyd's device page names the client once the code is entered: ask it.
        status, headers, _ = self.request("GET", urlunsplit((parts.scheme, parts.netloc, parts.path,
                                                             urlencode({"code": code}), "")))
        login = parse_qs(urlsplit(headers.get("Location", "")).query)
        client_id = login.get("client_id", [None])[0]
        scope = login.get("scope", [None])[0]
        if status != 302 or not client_id or not scope:
            raise StepFailed(f"glewlwyd did not recognise the user code (HTTP {status}, "
                             f"{headers.get('Location', '')[:300]})")
        self.grant(api, client_id, scope)
        url = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode({"code": code}) + "&g_continue", ""))
        status, headers, text = self.request("GET", url)
        prompt = parse_qs(urlsplit(headers.get("Location", "")).query).get("prompt", [""])[0]
        if prompt == "deviceComplete":
            return "authorized"
        raise StepFailed(f"glewlwyd did not complete the device code (HTTP {status}, prompt {prompt!r})")

    def end_session(self, end_session_url):
        """Ends the session an ID token names, as glewlwyd's login page does.

        glewlwyd's end_session endpoint only redirects to the login page with
        the ID token's sid (prompt=end_session); the page's "log out" button
        then DELETEs <plugin>/session/<sid> with the user's cookie, and that
        call sends the back-channel logout tokens (protocol_oidc.c,
        callback_oidc_end_session_list). Returns "ended SID".
        """
        self.sign_in(end_session_url)
        status, headers, _ = self.request("GET", end_session_url)
        login = parse_qs(urlsplit(headers.get("Location", "")).query)
        sid = login.get("sid", [None])[0]
        plugin = login.get("plugin", [None])[0]
        if status != 302 or not sid or login.get("prompt", [""])[0] != "end_session":
            raise StepFailed(f"glewlwyd did not accept the logout request (HTTP {status}, "
                             f"{headers.get('Location', '')[:300]})")
        base = end_session_url.split("?")[0].rstrip("/")
        if not base.endswith("/end_session") or not plugin:
            raise StepFailed(f"{end_session_url} is not a plugin's end_session URL")
        plugin_base = base[: -len("/end_session")]
        status, _, text = self.request("DELETE", f"{plugin_base}/session/{sid}")
        if status != 200:
            raise StepFailed(f"ending session {sid} failed (HTTP {status}): {text[:200]}")
        return f"ended {sid}"


def follow(url, ca=None):
    """GETs the client's redirect URI as the browser would; returns the exit status."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect(),
                                         urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca)))
    try:
        opener.open(url, timeout=TIMEOUT).read()
    except urllib.error.HTTPError as error:
        if error.code >= 400:
            body = " ".join(error.read().decode(errors="replace").split())[:400]
            print(f"browser: the redirect target answered HTTP {error.code}: {body}", file=sys.stderr)
            return 3
    except OSError as error:
        print(f"browser: following the redirect failed: {error}", file=sys.stderr)
        return 4
    return 0


def parse_arguments():
    parser = argparse.ArgumentParser(description="Plays the user's browser against glewlwyd.",
                                     epilog="Exit status: 0 success, 1 a step failed, 2 usage, "
                                            "3/4 --follow got an HTTP error/no answer.")
    parser.add_argument("url", metavar="AUTHORIZE_URL", nargs="?", help="the authorization request URL")
    parser.add_argument("--device", metavar="VERIFICATION_URL", help="approve a device flow instead")
    parser.add_argument("--end-session", metavar="END_SESSION_URL",
                        help="end the session an id_token_hint names (sends glewlwyd's back-channel logouts)")
    parser.add_argument("--user-code", help="the device flow's user code, when the URL does not carry it")
    parser.add_argument("--username", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--deny", action="store_true", help="take the grant away instead of granting it")
    parser.add_argument("--follow", action="store_true", help="also GET the redirect to the client")
    parser.add_argument("--ca", metavar="FILE", help="the CA to trust for https (the TLS front's; env.json puts it in)")
    arguments = parser.parse_args()
    if sum(value is not None for value in (arguments.url, arguments.device, arguments.end_session)) != 1:
        parser.error("give one of AUTHORIZE_URL, --device VERIFICATION_URL, --end-session END_SESSION_URL")
    if arguments.device and (arguments.follow or arguments.deny):
        parser.error("--follow and --deny are for the authorization code flow (glewlwyd cannot refuse a device code)")
    return arguments


def main():
    arguments = parse_arguments()
    browser = Browser(arguments.username, arguments.password, arguments.deny, arguments.ca)
    try:
        if arguments.device:
            print(browser.approve_device(arguments.device, arguments.user_code), flush=True)
            return 0
        if arguments.end_session:
            print(browser.end_session(arguments.end_session), flush=True)
            return 0
        location = browser.authorize(arguments.url)
    except StepFailed as error:
        print(f"browser: {error}", file=sys.stderr)
        return 1
    print(location, flush=True)
    return follow(location, arguments.ca) if arguments.follow else 0


if __name__ == "__main__":
    sys.exit(main())
