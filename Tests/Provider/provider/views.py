"""The protected resource: what a correct RFC 6750 resource server answers."""

import json

from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.www_authenticate import build_bearer_challenge, challenge_status

REALM = "provider"


def _authorize(request, scopes):
    """Returns (oauthlib request, None) for a valid token, else (None, challenge response).

    DOT's ProtectedResourceView answers a bare 403; RFC 6750 §3.1 wants 401 with
    a Bearer challenge (403 only for insufficient_scope). DOT's own challenge
    builder formats the header, so the client sees what DOT deployments send.
    """
    valid, oauthlib_request = get_oauthlib_core().verify_request(request, scopes=scopes)
    if valid:
        return oauthlib_request, None
    oauth2_error = getattr(oauthlib_request, "oauth2_error", None)
    if not oauth2_error and request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("bearer"):
        # "Bearer" with an empty token. Without any Bearer credentials (no header,
        # another scheme) RFC 6750 §3.1 says to send no error code, as DOT does.
        oauth2_error = {"error": "invalid_token"}
    response = HttpResponse(status=challenge_status(oauth2_error))
    response["WWW-Authenticate"] = build_bearer_challenge(request, oauth2_error=oauth2_error, realm=REALM)
    return None, response


def _identity(oauthlib_request):
    user = oauthlib_request.user
    if user is not None and user.is_authenticated:
        return {"username": user.get_username(), "scope": " ".join(oauthlib_request.scopes)}
    return {"client": oauthlib_request.client.name, "scope": " ".join(oauthlib_request.scopes)}


@csrf_exempt
@require_http_methods(["GET", "POST"])
def me(request):
    """Who the token belongs to: the user, or the client for a client-credentials
    token; with the method, and a POST's form fields, so a test can see what a
    followed redirect repeated."""
    oauthlib_request, denied = _authorize(request, scopes=[])
    if denied is not None:
        return denied
    identity = _identity(oauthlib_request)
    identity["method"] = request.method
    if request.method == "POST":
        identity["form"] = {key: request.POST.get(key) for key in request.POST}
    return JsonResponse(identity)


@require_GET
def admin(request):
    """Needs the `admin` scope: a token without it gets 403 insufficient_scope."""
    oauthlib_request, denied = _authorize(request, scopes=["admin"])
    if denied is not None:
        return denied
    return JsonResponse(_identity(oauthlib_request))


@csrf_exempt
@require_http_methods(["POST"])
def echo(request):
    """Needs a token; answers the JSON object it was sent, under `echo`, with
    who sent it: a client's request body can be seen to arrive (again, after
    a refresh and a retry)."""
    oauthlib_request, denied = _authorize(request, scopes=[])
    if denied is not None:
        return denied
    try:
        sent = json.loads(request.body)
    except ValueError:
        return JsonResponse({"error": "invalid_json"}, status=400)
    if not isinstance(sent, dict):
        return JsonResponse({"error": "not_an_object"}, status=400)
    identity = _identity(oauthlib_request)
    identity["echo"] = sent
    return JsonResponse(identity)
