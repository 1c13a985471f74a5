"""Plays the user's browser against the local provider.

Authorization code flow (RFC 6749 §4.1):

    browser.py AUTHORIZE_URL --username alice --password P [--deny] [--follow]

GETs the authorize URL, signs in on the login page it is sent to, answers the
consent form ("Authorize", or "Cancel" with --deny) and prints on stdout the
URL the provider redirects to (the Location of its final redirect to the
client), without going there; with --follow it then GETs that URL too (for a
loopback listener) and fails if that request fails.

Device flow (RFC 8628 §3.3):

    browser.py --device VERIFICATION_URL [--user-code CODE] --username alice --password P [--deny]

Opens the verification URL (verification_uri_complete, or verification_uri with
--user-code), signs in, submits the user code, accepts (or denies) and prints
the grant's final status ("authorized" or "denied").

RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0):

    browser.py --logout END_SESSION_URL [--username alice --password P] [--deny] [--follow]

Signs in first when given a user (so that the provider has a session to end and
asks for confirmation, which is given, or refused with --deny), opens the
end-session URL and prints the URL the provider redirects to off its own
pages (the post_logout_redirect_uri with the state), or, when it stays on its
own origin, the last URL it redirected to (without a post_logout_redirect_uri
DOT sends the browser to its own root). --follow then GETs the printed URL.

Exit status: 0 on success; 1 when a step fails (a message on stderr, with the
provider's own error text when it shows an error page); 2 on a usage error;
3 when --follow's request got an HTTP error status; 4 when it did not complete.
"""

import argparse
import re
import sys
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import requests

MAX_STEPS = 12
TIMEOUT = 30


class StepFailed(Exception):
    """A step of the browser flow went wrong; the message says which and why."""


class Page(HTMLParser):
    """The parts of an HTML page a scripted browser needs: forms, error notes, text."""

    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.forms = []
        self.errors = []
        self.text = []
        self.headings = []
        self._form = None
        self._skip = 0
        self._error_tags = []
        self._heading = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        attributes = {key: value or "" for key, value in attrs}
        if tag in ("script", "style"):
            self._skip += 1
        classes = attributes.get("class", "").split()
        if "errornote" in classes or "errorlist" in classes:
            self._error_tags.append(tag)
        if tag in ("h1", "h2", "h3"):
            self._heading = []
        if tag == "form":
            self._form = {"attrs": attributes, "fields": []}
            self.forms.append(self._form)
        elif self._form is not None and tag in ("input", "button", "textarea", "select"):
            field = dict(attributes)
            field["tag"] = tag
            field.setdefault("type", "submit" if tag == "button" else "text")
            self._form["fields"].append(field)

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if self._error_tags and tag == self._error_tags[-1]:
            self._error_tags.pop()
        if tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append(" ".join("".join(self._heading).split()))
            self._heading = None
        if tag == "form":
            self._form = None

    def handle_data(self, data):
        if self._skip:
            return
        if data.strip():
            self.text.append(data.strip())
            if self._error_tags:
                self.errors.append(data.strip())
        if self._heading is not None:
            self._heading.append(data)

    def form_with(self, predicate):
        for form in self.forms:
            if any(predicate(field) for field in form["fields"]):
                return form
        return None

    def summary(self, limit=400):
        text = " ".join(" ".join(self.text).split())
        return text if len(text) <= limit else text[:limit] + "..."


def form_values(form):
    """The values a browser would send for the form's non-button fields."""
    values = {}
    for field in form["fields"]:
        kind = field.get("type", "text").lower()
        name = field.get("name")
        if not name or kind in ("submit", "button", "image", "reset"):
            continue
        if kind in ("checkbox", "radio") and "checked" not in field:
            continue
        values[name] = field.get("value", "")
    return values


def form_action(form, page_url):
    action = form["attrs"].get("action", "")
    return urljoin(page_url, action) if action else page_url


def origin(url):
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, port


def describe_failure(response, what):
    page = Page(response.text) if "html" in response.headers.get("Content-Type", "") else None
    detail = ""
    if page is not None:
        detail = "; ".join(page.errors) or page.summary()
    elif response.text:
        detail = " ".join(response.text.split())[:400]
    where = response.url.split("?", 1)[0]
    return f"{what} (HTTP {response.status_code} at {where}): {detail}".rstrip(": ")


class Browser:
    def __init__(self, username, password, deny):
        self.session = requests.Session()
        # The provider and the loopback listener are on 127.0.0.1: never use a
        # proxy from the environment (nor a .netrc).
        self.session.trust_env = False
        self.username = username
        self.password = password
        self.deny = deny
        self.logged_in = False

    def get(self, url):
        return self.request("GET", url)

    def request(self, method, url, data=None):
        try:
            return self.session.request(method, url, data=data, allow_redirects=False, timeout=TIMEOUT)
        except requests.RequestException as error:
            raise StepFailed(f"{method} {url} failed: {error}") from None

    def submit(self, form, page_url, extra=None, drop=()):
        values = form_values(form)
        for name in drop:
            values.pop(name, None)
        values.update(extra or {})
        method = form["attrs"].get("method", "get").upper()
        return self.request(method, form_action(form, page_url), data=values)

    def log_in(self, form, response):
        if self.logged_in:
            errors = Page(response.text).errors
            if errors:
                raise StepFailed(f"login as {self.username!r} failed: {'; '.join(errors)}")
            raise StepFailed("the login page came back after signing in (not an authorization URL?)")
        self.logged_in = True
        return self.submit(form, response.url, {"username": self.username, "password": self.password})

    def authorize(self, authorize_url):
        """Runs the code flow's browser part; returns the Location sent to the client."""
        provider = origin(authorize_url)
        response = self.get(authorize_url)
        for _ in range(MAX_STEPS):
            if response.is_redirect:
                location = response.headers["Location"]
                target = urljoin(response.url, location)
                if origin(target) != provider:
                    return location
                response = self.get(target)
                continue
            if response.status_code != 200:
                raise StepFailed(describe_failure(response, "the provider answered with an error"))
            page = Page(response.text)
            login = page.form_with(lambda field: field.get("name") == "password")
            if login is not None:
                response = self.log_in(login, response)
                continue
            consent = page.form_with(lambda field: field.get("name") == "allow")
            if consent is not None:
                if self.deny:
                    # The "Cancel" button has no name: DOT sees no `allow` field.
                    response = self.submit(consent, response.url, drop=("allow",))
                else:
                    response = self.submit(consent, response.url, {"allow": "Authorize"})
                continue
            raise StepFailed(describe_failure(response, "the provider showed an error page instead of redirecting"))
        raise StepFailed(f"no redirect to the client after {MAX_STEPS} steps")

    def approve_device(self, verification_url, user_code):
        """Runs the device flow's browser part; returns the grant's final status."""
        response = self.get(verification_url)
        code_sent = False
        decided = False
        for _ in range(MAX_STEPS):
            if response.is_redirect:
                response = self.get(urljoin(response.url, response.headers["Location"]))
                continue
            if response.status_code != 200:
                raise StepFailed(describe_failure(response, "the provider answered with an error"))
            page = Page(response.text)
            login = page.form_with(lambda field: field.get("name") == "password")
            if login is not None:
                response = self.log_in(login, response)
                continue
            code_form = page.form_with(lambda field: field.get("name") == "user_code")
            if code_form is not None:
                if code_sent:
                    raise StepFailed(describe_failure(response, "the provider refused the user code"))
                code_sent = True
                extra = {"user_code": user_code} if user_code else {}
                if not (user_code or form_values(code_form).get("user_code")):
                    raise StepFailed("the verification page asks for a user code: pass --user-code")
                response = self.submit(code_form, response.url, extra)
                continue
            decision = page.form_with(lambda field: field.get("name") == "action")
            if decision is not None and not decided:
                decided = True
                response = self.submit(decision, response.url, {"action": "deny" if self.deny else "accept"})
                continue
            if decided:
                status = " ".join(page.headings)
                match = re.search(r"\b(authorized|denied|expired|pending)\b", status, re.IGNORECASE)
                if match is None:
                    raise StepFailed(describe_failure(response, "unexpected page after the decision"))
                return match.group(1).lower()
            raise StepFailed(describe_failure(response, "the provider showed an unexpected page"))
        raise StepFailed(f"the device flow did not finish after {MAX_STEPS} steps")

    def sign_in(self, provider_url):
        """Signs in on the provider's login page, as a user who comes back later."""
        scheme, host, port = origin(provider_url)
        login_url = f"{scheme}://{host}:{port}/accounts/login/"
        response = self.get(login_url)
        login = Page(response.text).form_with(lambda field: field.get("name") == "password")
        if response.status_code != 200 or login is None:
            raise StepFailed(describe_failure(response, "no login form"))
        response = self.log_in(login, response)
        if not response.is_redirect:
            errors = Page(response.text).errors
            raise StepFailed(f"login as {self.username!r} failed: {'; '.join(errors) or 'no redirect'}")

    def log_out(self, end_session_url):
        """Follows an end-session URL; returns where the provider sends the browser."""
        provider = origin(end_session_url)
        if self.username:
            self.sign_in(end_session_url)
        response = self.get(end_session_url)
        last = None
        for _ in range(MAX_STEPS):
            if response.is_redirect:
                location = response.headers["Location"]
                target = urljoin(response.url, location)
                if origin(target) != provider:
                    return location
                last = target
                response = self.get(target)
                continue
            if last is not None:
                # Sent to a page of the provider's own (its root, without a
                # post_logout_redirect_uri): that is where the logout ended.
                return last
            if response.status_code != 200:
                raise StepFailed(describe_failure(response, "the provider refused the logout"))
            page = Page(response.text)
            confirm = page.form_with(lambda field: field.get("name") == "allow")
            if confirm is None:
                raise StepFailed(describe_failure(response, "the provider showed an unexpected page"))
            if self.deny:
                response = self.submit(confirm, response.url, drop=("allow",))
                if not response.is_redirect:
                    raise StepFailed(describe_failure(response, "the logout was refused"))
            else:
                response = self.submit(confirm, response.url, {"allow": "Logout"})
        raise StepFailed(f"no redirect after {MAX_STEPS} steps")


def follow(url):
    """GETs the client's redirect URI as the browser would; returns the exit status."""
    session = requests.Session()
    session.trust_env = False
    try:
        response = session.get(url, allow_redirects=False, timeout=TIMEOUT)
    except requests.RequestException as error:
        print(f"browser: following the redirect failed: {error}", file=sys.stderr)
        return 4
    if response.status_code >= 400:
        body = " ".join(response.text.split())[:400]
        print(f"browser: the redirect target answered HTTP {response.status_code}: {body}", file=sys.stderr)
        return 3
    return 0


def parse_arguments():
    parser = argparse.ArgumentParser(
        description="Plays the user's browser against the local provider.",
        epilog="Exit status: 0 success, 1 a step failed, 2 usage, 3/4 --follow got an HTTP error/no answer.",
    )
    parser.add_argument("url", metavar="AUTHORIZE_URL", nargs="?", help="the authorization request URL")
    parser.add_argument("--device", metavar="VERIFICATION_URL", help="approve a device flow instead")
    parser.add_argument("--logout", metavar="END_SESSION_URL", help="follow an RP-initiated logout URL instead")
    parser.add_argument("--user-code", help="the device flow's user code, when the URL does not carry it")
    parser.add_argument("--username")
    parser.add_argument("--password")
    parser.add_argument("--deny", action="store_true", help="refuse consent instead of granting it")
    parser.add_argument("--follow", action="store_true", help="also GET the redirect to the client")
    arguments = parser.parse_args()
    if [arguments.url, arguments.device, arguments.logout].count(None) != 2:
        parser.error("give one of AUTHORIZE_URL, --device VERIFICATION_URL, --logout END_SESSION_URL")
    if arguments.logout is None and not (arguments.username and arguments.password):
        parser.error("--username and --password are required")
    if arguments.logout is not None and bool(arguments.username) != bool(arguments.password):
        parser.error("--username and --password go together")
    if arguments.device and arguments.follow:
        parser.error("--follow is for the authorization code flow")
    return arguments


def main():
    arguments = parse_arguments()
    browser = Browser(arguments.username, arguments.password, arguments.deny)
    try:
        if arguments.device:
            print(browser.approve_device(arguments.device, arguments.user_code), flush=True)
            return 0
        if arguments.logout:
            location = browser.log_out(arguments.logout)
        else:
            location = browser.authorize(arguments.url)
    except StepFailed as error:
        print(f"browser: {error}", file=sys.stderr)
        return 1
    print(location, flush=True)
    return follow(location) if arguments.follow else 0


if __name__ == "__main__":
    sys.exit(main())
