"""Protected resources behind this authorization server, each with its own
RFC 9728 metadata, as a Model Context Protocol server is one (issue 38).

Three good resources, `a`, `b` and `quiet`, each at <origin>/res/<name> with its
metadata in the RFC 9728 path form
<origin>/.well-known/oauth-protected-resource/res/<name>
(`resource` <origin>/res/<name>, `authorization_servers` [<origin>],
`scopes_supported` ["read", "write"]). `a` and `b` point at it from their 401
challenges (`resource_metadata`); `quiet` does not (a client finds it at the
well-known URI). Under each:

GET /res/<name>/hello               needs `read`
GET /res/<name>/admin               needs `admin` (403 insufficient_scope, scope="admin")
GET /res/<name>/insufficient-always 403 insufficient_scope scope="admin" to every token,
                                    whatever its scope (a step-up that never ends)
GET /res/<name>/fresh-auth[?max_age=N] needs a token from a sign-in at most N seconds
                                    ago (default 300): else 401
                                    insufficient_user_authentication with max_age (RFC 9470)

A token is accepted only when it was issued for this resource (RFC 8707: its
`resource` covers the URL, DOT's prefix rule): a token for another resource
gets 401 invalid_token, and so does a token issued without any `resource` (DOT
takes those as good everywhere; a resource that holds to the MCP spec does not).
Answers 200 with {"resource", "endpoint", "username" (or null), "client_id",
"scope", "audience" (the token's resources)}.

The hostile resources (provider/hostile.py) are the same resources with other
metadata: `Resource` and `endpoint_view` below.
"""

import hashlib
import threading

from django.contrib.auth import get_user_model
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.views import OAuthProtectedResourceMetadataView
from oauth2_provider.www_authenticate import build_bearer_challenge, challenge_status

class _AuthTimes:
    """When the user signed in for each token (OIDC's auth_time), by token hash.

    The user's last login read when a code (or device, password) grant is
    exchanged is the sign-in that made the grant; a refresh carries the time
    of the refresh token it spent. Kept per token, not per user, so that other
    tests signing the same user in meanwhile do not make an old token fresh.
    In memory, for the run.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._times = {}

    @staticmethod
    def _key(value):
        return hashlib.sha256(value.encode("utf-8")).hexdigest()

    def record(self, token, request):
        """Called by the validator (provider/oidc.py) when it has issued token (the response dict)."""
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return
        with self._lock:
            auth_time = None
            if request.grant_type == "refresh_token" and getattr(request, "refresh_token", None):
                auth_time = self._times.get(self._key(request.refresh_token))
            if auth_time is None:
                fresh = get_user_model().objects.filter(pk=user.pk).values_list("last_login", flat=True).first()
                auth_time = fresh or timezone.now()
            for name in ("access_token", "refresh_token"):
                if token.get(name):
                    self._times[self._key(token[name])] = auth_time

    def of_access_token(self, value):
        if not value:
            return None
        with self._lock:
            return self._times.get(self._key(value))


auth_times = _AuthTimes()


def _bearer_token(request):
    scheme, _, value = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


RESOURCE_NAMES = ("a", "b", "quiet")
# The scopes a client asks for by itself (scopes_supported, the first
# challenge's scope); `admin` only comes through a step-up.
SCOPES_SUPPORTED = ["read", "write"]
FIRST_CHALLENGE_SCOPE = "read"
STEP_UP_SCOPE = "admin"
DEFAULT_MAX_AGE = 300
MAX_MAX_AGE = 86400


def origin(request):
    return f"{request.scheme}://{request.get_host()}"


def prm_url(request, resource_path):
    """The RFC 9728 path-form metadata URL of <origin>/<resource_path>."""
    return f"{origin(request)}/.well-known/oauth-protected-resource/{resource_path}"


class Resource:
    """How one protected resource (at <origin>/<path>) challenges and answers."""

    def __init__(self, path, metadata_in_challenge=True, metadata_url=None):
        self.path = path
        self.metadata_in_challenge = metadata_in_challenge
        # A function of the request: the challenge's resource_metadata; by
        # default the path-form well-known URI.
        self.metadata_url = metadata_url or (lambda request: prm_url(request, self.path))

    def identifier(self, request):
        return f"{origin(request)}/{self.path}"

    def challenge(self, request, error=None, status=None, **extra):
        """A response with a Bearer challenge: RFC 6750 §3 (401 or 403), RFC 9728 §5.1."""
        attributes = {}
        if error is not None:
            attributes.update(error)
        attributes.update(extra)
        response = HttpResponse(status=status or challenge_status(error))
        response["WWW-Authenticate"] = build_bearer_challenge(
            request,
            oauth2_error=attributes or None,
            realm=self.path,
            resource_metadata_url=self.metadata_url(request) if self.metadata_in_challenge else None,
        )
        return response

    def verify(self, request, scopes):
        """(oauthlib request, None) for a token of this resource with scopes, else (None, challenge)."""
        valid, oauthlib_request = get_oauthlib_core().verify_request(request, scopes=scopes)
        if not valid:
            error = getattr(oauthlib_request, "oauth2_error", None)
            if not error and request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("bearer"):
                error = {"error": "invalid_token"}
            if not error:
                # No credentials: the first challenge says what to ask for (MCP 2025-11).
                return None, self.challenge(request, scope=FIRST_CHALLENGE_SCOPE)
            error = dict(error)
            if error.get("error") == "insufficient_scope":
                error["scope"] = " ".join(scopes)
            return None, self.challenge(request, error)
        token = getattr(oauthlib_request, "access_token", None)
        if token is None or not token.resource:
            return None, self.challenge(
                request,
                {
                    "error": "invalid_token",
                    "error_description": "The access token was not issued for a resource (RFC 8707 resource).",
                },
            )
        return oauthlib_request, None

    def answer(self, request, oauthlib_request, endpoint):
        user = oauthlib_request.user
        token = oauthlib_request.access_token
        return JsonResponse(
            {
                "resource": self.identifier(request),
                "endpoint": endpoint,
                "username": user.get_username() if user is not None and user.is_authenticated else None,
                "client_id": oauthlib_request.client.client_id,
                "scope": " ".join(oauthlib_request.scopes),
                "audience": list(token.resource),
            }
        )

    # The endpoints.

    def hello(self, request):
        oauthlib_request, denied = self.verify(request, ["read"])
        return denied or self.answer(request, oauthlib_request, "hello")

    def admin(self, request):
        oauthlib_request, denied = self.verify(request, [STEP_UP_SCOPE])
        return denied or self.answer(request, oauthlib_request, "admin")

    def insufficient_always(self, request):
        _, denied = self.verify(request, [])
        if denied is not None:
            return denied
        return self.challenge(
            request,
            {
                "error": "insufficient_scope",
                "error_description": "This resource asks for more scope on every request.",
                "scope": STEP_UP_SCOPE,
            },
        )

    def fresh_auth(self, request):
        try:
            max_age = int(request.GET.get("max_age", DEFAULT_MAX_AGE))
        except ValueError:
            max_age = -1
        if not 0 <= max_age <= MAX_MAX_AGE:
            return JsonResponse(
                {"error": "invalid_request", "error_description": f"max_age must be 0 to {MAX_MAX_AGE}"}, status=400
            )
        oauthlib_request, denied = self.verify(request, [])
        if denied is not None:
            return denied
        auth_time = auth_times.of_access_token(_bearer_token(request))
        if auth_time is None or (timezone.now() - auth_time).total_seconds() > max_age:
            return self.challenge(
                request,
                {
                    "error": "insufficient_user_authentication",
                    "error_description": "A more recent authentication is required.",
                    "max_age": str(max_age),
                },
                status=401,
            )
        return self.answer(request, oauthlib_request, "fresh-auth")


RESOURCES = {name: Resource(f"res/{name}", metadata_in_challenge=(name != "quiet")) for name in RESOURCE_NAMES}

ENDPOINTS = {
    "hello": Resource.hello,
    "admin": Resource.admin,
    "insufficient-always": Resource.insufficient_always,
    "fresh-auth": Resource.fresh_auth,
}


def endpoint_view(resources):
    """A view for /<prefix>/<name>/<endpoint> over a table of resources."""

    @csrf_exempt
    @require_http_methods(["GET", "POST"])
    def view(request, name, endpoint):
        resource = resources.get(name)
        handler = ENDPOINTS.get(endpoint)
        if resource is None or handler is None:
            return JsonResponse({"error": "not_found"}, status=404)
        return handler(resource, request)

    return view


resource_endpoint = endpoint_view(RESOURCES)


class ResourceMetadataView(OAuthProtectedResourceMetadataView):
    """DOT's RFC 9728 document with this resource's identifier and scopes."""

    resource = None

    def get_resource(self, request):
        return self.resource.identifier(request)

    def get_scopes_supported(self):
        return SCOPES_SUPPORTED

    def get_resource_name(self):
        return f"test resource {self.resource.path}"


def metadata_view(resource):
    return ResourceMetadataView.as_view(resource=resource)


RESOURCE_METADATA_VIEWS = {resource.path: metadata_view(resource) for resource in RESOURCES.values()}
