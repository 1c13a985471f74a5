"""What the test harness asks the provider itself: the /test/ endpoints.

They exist only in this test provider (a real one has nothing like them), and
answer only on the loopback interface the server is bound to. They let a test
prove from the provider's own records what happened at the token endpoint:

GET  /test/token-requests[?client_id=ID]
     {"requests": [{"client_id": ..., "grant_type": ..., "status": 200, "error": null}, ...],
      "delaying": 0}
     Every POST to the token endpoint since the provider started that has been
     answered (or is being held, below), in the order the requests arrived;
     optionally only those of one client. "delaying" is the number of
     responses being held back by the delay below.
GET  /test/grants?client_id=ID&username=NAME
     {"live_refresh_tokens": N, "live_access_tokens": M}
     For that client and user: refresh tokens not revoked, access tokens not expired.
POST /test/delay-next-token-response   (form: seconds=FLOAT)
     Holds the next 200 response of the token endpoint for that many seconds,
     once: after the view ran and committed (the token is issued and stored),
     before the response is sent. seconds=0 disarms. Answers {"armed": seconds}.
ANY  /test/moved-to-localhost/<path>
     302 to http://localhost:<port>/<path>: the same server under another
     origin, for a client whose transport follows redirects on its own.
POST /test/expire-access-token   (form: token=ACCESS_TOKEN)
     Ends that access token's life now, as if it had expired or been made
     invalid, and leaves its grant's refresh token as it was: a token the
     resource server rejects while the client still believes it fresh.
     Answers {"expired": 1}, or 404 when no access token has that value.
GET  /test/discovery-requests
     {"requests": [{"method": "GET", "url": ..., "status": 200}, ...]}
     Every request for a metadata document (/.well-known/*, the hostile ones)
     or to a registration endpoint since the provider started, in the order
     they were answered: what a client fetched to configure itself.
POST /test/forget-client   (form: client_id=ID)
     Deletes that client, its tokens and grants with it: a server that forgot
     a registration. Answers {"deleted": 1}, or 404 for an unknown client.

Token requests are listed with their RFC 8707 `resource` parameters too.

The server is a threaded WSGI server in one process: the records live in memory
behind a lock. No token, secret or password is ever recorded.
"""

import base64
import binascii
import bisect
import functools
import ipaddress
import itertools
import json
import math
import threading
import time
from urllib.parse import unquote_plus

from django.db import connections
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

TOKEN_VIEW_NAME = "oauth2_provider:token"
# A test that holds a response longer than this has lost track of time.
MAX_DELAY_SECONDS = 600.0


class _TokenEndpointLog:
    def __init__(self):
        self._lock = threading.Lock()
        self._arrivals = itertools.count()
        self._requests = []  # (arrival, entry), sorted by arrival
        self._delay_armed = None  # seconds, or None
        self._delaying = 0

    def arrival(self):
        """A number for a request that has just arrived, before its view runs."""
        with self._lock:
            return next(self._arrivals)

    def record(self, arrival, entry, status):
        """Adds entry, answered; returns the seconds to hold this response (0: none).

        One critical section: a poller that sees the entry with status 200 and
        "delaying" 1 sees both or neither, and two concurrent 200 responses
        cannot both consume one arming.
        """
        with self._lock:
            # Answers may come in another order than the requests (the threads
            # race): keep the requests' order.
            bisect.insort(self._requests, (arrival, entry), key=lambda item: item[0])
            if status != 200 or self._delay_armed is None:
                return 0.0
            seconds, self._delay_armed = self._delay_armed, None
            self._delaying += 1
            return seconds

    def release(self):
        with self._lock:
            self._delaying -= 1

    def arm(self, seconds):
        with self._lock:
            self._delay_armed = seconds if seconds > 0 else None

    def snapshot(self, client_id=None):
        with self._lock:
            requests = [
                dict(entry) for _, entry in self._requests if client_id is None or entry["client_id"] == client_id
            ]
            return {"requests": requests, "delaying": self._delaying}


token_endpoint_log = _TokenEndpointLog()


def _basic_client_id(request):
    """The client id of an HTTP Basic Authorization header, form-decoded as
    RFC 6749 §2.3.1 asks (DOT decodes it the same way), or None."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() != "basic" or not credentials.strip():
        return None
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    client_id, separator, _secret = decoded.partition(":")
    if not separator:
        return None
    return unquote_plus(client_id)


def _oauth_error(response):
    """The `error` member of a JSON error response, else None."""
    if response.status_code < 400 or getattr(response, "streaming", False):
        return None
    try:
        body = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) else None


def _release_database():
    """Closes this thread's database connections, so that nothing (an open
    transaction, an unfinished read) can hold a sqlite lock while a response
    is held. Django opens a new connection when one is needed again."""
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            # Only under ATOMIC_REQUESTS-like wrapping, which this provider does
            # not use: the held response must follow a commit, not precede it.
            raise RuntimeError("a token response is held inside a transaction")
        connection.close()


class TokenEndpointLogMiddleware:
    """Records each POST to the token endpoint; holds a response when armed.

    First in MIDDLEWARE: it sees the status the client gets, and when it holds a
    response every other middleware and the view are done (DOT commits the
    issued tokens in its own transaction, inside the view).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Every request takes a number: which ones are token requests is known
        # once the URL is resolved, inside get_response.
        arrival = token_endpoint_log.arrival()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        if request.method != "POST" or match is None or match.view_name != TOKEN_VIEW_NAME:
            return response
        # Read the form after the view: DOT parsed it already, and reading it
        # first would be a second reader of the body stream.
        form = request.POST
        entry = {
            "client_id": _basic_client_id(request) or form.get("client_id") or None,
            "grant_type": form.get("grant_type") or None,
            "status": response.status_code,
            "error": _oauth_error(response),
            # RFC 8707: every resource parameter, in order ([] when none).
            "resource": form.getlist("resource"),
        }
        seconds = token_endpoint_log.record(arrival, entry, response.status_code)
        if seconds > 0:
            try:
                _release_database()
                time.sleep(seconds)
            finally:
                token_endpoint_log.release()
        return response


# The requests a client makes to configure itself: metadata documents and
# registrations (RFC 9728, RFC 8414, OIDC discovery, RFC 7591/7592, and the
# hostile variants' own), so a test can show what a second call did not repeat.
DISCOVERY_PATH_PREFIXES = ("/.well-known/", "/o/register/")
DISCOVERY_HOSTILE_SUFFIXES = ("/metadata", "/metadata-moved", "/register")


def _is_discovery_path(path):
    if path.startswith(DISCOVERY_PATH_PREFIXES):
        return True
    return path.startswith("/hostile/") and path.endswith(DISCOVERY_HOSTILE_SUFFIXES)


class _DiscoveryLog:
    def __init__(self):
        self._lock = threading.Lock()
        self._requests = []

    def record(self, entry):
        with self._lock:
            self._requests.append(entry)

    def snapshot(self):
        with self._lock:
            return [dict(entry) for entry in self._requests]


discovery_log = _DiscoveryLog()


class DiscoveryLogMiddleware:
    """Records each request for a metadata document or to a registration endpoint."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if _is_discovery_path(request.path):
            discovery_log.record(
                {
                    "method": request.method,
                    # Without the query; the host says which origin was asked.
                    "url": f"{request.scheme}://{request.get_host()}{request.path}",
                    "status": response.status_code,
                }
            )
        return response


def _loopback_only(view):
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            loopback = ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            return JsonResponse({"error": "forbidden"}, status=403)
        return view(request, *args, **kwargs)

    return wrapped


# For the other modules' test endpoints (provider/cimd.py, provider/resources.py).
loopback_only = _loopback_only


def _bad_request(description):
    return JsonResponse({"error": "invalid_request", "error_description": description}, status=400)


@csrf_exempt
@_loopback_only
@require_GET
def token_requests(request):
    """The token endpoint's requests so far, optionally of one client."""
    return JsonResponse(token_endpoint_log.snapshot(request.GET.get("client_id")))


@csrf_exempt
@_loopback_only
@require_GET
def grants(request):
    """How much of a user's grant to a client is alive."""
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model

    client_id = request.GET.get("client_id")
    username = request.GET.get("username")
    if not client_id or not username:
        return _bad_request("client_id and username are required")
    application = get_application_model().objects.filter(client_id=client_id).first()
    if application is None:
        return JsonResponse({"error": "not_found", "error_description": "no such client"}, status=404)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        return JsonResponse({"error": "not_found", "error_description": "no such user"}, status=404)
    live_refresh_tokens = (
        get_refresh_token_model().objects.filter(application=application, user=user, revoked__isnull=True).count()
    )
    live_access_tokens = (
        get_access_token_model().objects.filter(application=application, user=user, expires__gt=timezone.now()).count()
    )
    return JsonResponse({"live_refresh_tokens": live_refresh_tokens, "live_access_tokens": live_access_tokens})


@csrf_exempt
@_loopback_only
@require_POST
def delay_next_token_response(request):
    """Arms (seconds > 0) or disarms (seconds = 0) the one-shot hold of the next 200."""
    try:
        seconds = float(request.POST.get("seconds", ""))
    except ValueError:
        return _bad_request("seconds must be a number")
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_DELAY_SECONDS:
        return _bad_request(f"seconds must be between 0 and {MAX_DELAY_SECONDS:g}")
    token_endpoint_log.arm(seconds)
    return JsonResponse({"armed": seconds})


@csrf_exempt
@_loopback_only
def redirect(request):
    """A redirect (302, or `status`: 301, 303, 307, 308) to `to` (an http or
    https URL): a resource that moved, for the tests of how a signed request
    follows redirects (the token only to its own origin). Any method: a 307
    or 308 must be repeated with the method and body it answered."""
    target = request.GET.get("to", "")
    if not (target.startswith("http://") or target.startswith("https://")):
        return _bad_request("to must be an http or https URL")
    status = request.GET.get("status", "302")
    if status not in ("301", "302", "303", "307", "308"):
        return _bad_request("status must be 301, 302, 303, 307 or 308")
    response = HttpResponse(status=int(status))
    response["Location"] = target
    return response


@csrf_exempt
@_loopback_only
def moved_to_localhost(request, rest):
    """A 302 from /test/moved-to-localhost/<rest> to http://localhost:<port>/<rest>:
    the same server under another origin (host), for the tests of a client
    whose transport follows redirects on its own. Any method."""
    response = HttpResponse(status=302)
    response["Location"] = f"http://localhost:{request.get_port()}/{rest}"
    return response


@csrf_exempt
@_loopback_only
@require_POST
def expire_access_token(request):
    """Ends one access token's life now; its refresh token stays usable."""
    import hashlib
    from datetime import timedelta

    from oauth2_provider.models import get_access_token_model

    token = request.POST.get("token", "")
    if not token:
        return _bad_request("token is required")
    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    expired = (
        get_access_token_model()
        .objects.filter(token_checksum=checksum)
        .update(expires=timezone.now() - timedelta(seconds=1))
    )
    if expired == 0:
        return JsonResponse({"error": "not_found", "error_description": "no such access token"}, status=404)
    return JsonResponse({"expired": expired})


@csrf_exempt
@_loopback_only
@require_GET
def discovery_requests(request):
    """The metadata and registration requests so far, in the order they were answered."""
    return JsonResponse({"requests": discovery_log.snapshot()})


@csrf_exempt
@_loopback_only
@require_POST
def forget_client(request):
    """Deletes a client (its tokens and grants with it): a server that forgot a registration."""
    from oauth2_provider.models import get_application_model

    client_id = request.POST.get("client_id", "")
    if not client_id:
        return _bad_request("client_id is required")
    deleted = 0
    for application in get_application_model().objects.filter(client_id=client_id):
        application.delete()
        deleted += 1
    if deleted == 0:
        return JsonResponse({"error": "not_found", "error_description": "no such client"}, status=404)
    return JsonResponse({"deleted": deleted})
