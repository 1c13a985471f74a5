"""Hostile protected resources and authorization servers, for the tests of a
client that configures itself from a URL (issue 38): each one breaks one rule
that such a client must hold to, and is otherwise a good resource, so that a
client that lets the broken rule pass goes on and visibly succeeds.

Each case <case> is a resource at <origin>/hostile/<case> with the endpoints of
provider/resources.py (/hello and the others), answering 401 with a Bearer
challenge whose resource_metadata names its metadata, by default
<origin>/.well-known/oauth-protected-resource/hostile/<case>. A variant
authorization server <origin>/hostile/<case> has its RFC 8414 document at
<origin>/.well-known/oauth-authorization-server/hostile/<case>; it names the
endpoints of the real one (so its sign-ins would carry the real issuer in
RFC 9207's `iss`). README.md lists the cases.
"""

import json

from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from oauth2_provider.views import OAuthServerMetadataView

from .resources import SCOPES_SUPPORTED, Resource, endpoint_view, origin

OVERSIZED_BYTES = 80 * 1024
PREFIX = "hostile"


def _loopback_origin(request):
    return f"http://127.0.0.1:{request.get_port()}"


def _resource_document(request, resource_path, **changes):
    document = {
        "resource": f"{origin(request)}/{resource_path}",
        "authorization_servers": [origin(request)],
        "scopes_supported": SCOPES_SUPPORTED,
        "bearer_methods_supported": ["header"],
        "resource_name": f"hostile test resource {resource_path}",
    }
    document.update(changes)
    return document


def _server_document(request, case, **changes):
    """The real server's RFC 8414 document as issuer <origin>/hostile/<case>, changed."""
    document = json.loads(OAuthServerMetadataView().get(request).content)
    document["issuer"] = f"{origin(request)}/{PREFIX}/{case}"
    for key, value in changes.items():
        if value is None:
            document.pop(key, None)
        else:
            document[key] = value
    return document


def _own_server(case):
    return lambda request: [f"{origin(request)}/{PREFIX}/{case}"]


# case -> (what it breaks, the resource's metadata document as a function of
# (request, resource path)). The server documents are in SERVERS.
CASES = {
    # The challenge's resource_metadata is on another origin (localhost, the
    # same server): a client must not fetch it. The document there names the
    # 127.0.0.1 resource, so a client that fetches it anyway succeeds.
    "other-origin": lambda request, path: _resource_document(
        request, path, resource=f"{_loopback_origin(request)}/{path}", authorization_servers=[_loopback_origin(request)]
    ),
    # The metadata names another resource on this origin (RFC 9728 §3.3).
    "wrong-resource": lambda request, path: _resource_document(request, path, resource=f"{origin(request)}/res/a"),
    # ... on another origin.
    "foreign-resource": lambda request, path: _resource_document(
        request, path, resource=f"https://resource.example/{path}"
    ),
    # ... whose URL is a prefix of the resource's as a string, not by path
    # segments: <origin>/hostile/not-a-path for <origin>/hostile/not-a-path-prefix/hello.
    "not-a-path-prefix": lambda request, path: _resource_document(
        request, path, resource=f"{origin(request)}/{PREFIX}/not-a-path"
    ),
    # authorization_servers has a plain-http issuer that is not on a loopback address.
    "http-as": lambda request, path: _resource_document(request, path, authorization_servers=["http://as.example"]),
    # The authorization server's document names another issuer (RFC 8414 §3.3).
    "issuer-mismatch": lambda request, path: _resource_document(
        request, path, authorization_servers=_own_server("issuer-mismatch")(request)
    ),
    # A good document, padded to 80 KiB: over a 64 KiB limit.
    "oversized": lambda request, path: _resource_document(request, path, padding="x" * OVERSIZED_BYTES),
    # The challenge's resource_metadata answers 302 to a good document
    # (<origin>/hostile/redirect/metadata -> .../metadata-moved); the
    # well-known URI has none.
    "redirect": lambda request, path: _resource_document(request, path),
    # A server whose registration endpoint answers 201 without client_id.
    "noclientid": lambda request, path: _resource_document(
        request, path, authorization_servers=_own_server("noclientid")(request)
    ),
    # A server that does not advertise PKCE (no code_challenge_methods_supported).
    "nopkce": lambda request, path: _resource_document(
        request, path, authorization_servers=_own_server("nopkce")(request)
    ),
    # A server that advertises PKCE with `plain` only.
    "plain-pkce": lambda request, path: _resource_document(
        request, path, authorization_servers=_own_server("plain-pkce")(request)
    ),
    # A server with neither a registration endpoint nor client ID metadata documents.
    "noidentity": lambda request, path: _resource_document(
        request, path, authorization_servers=_own_server("noidentity")(request)
    ),
}

SERVERS = {
    "issuer-mismatch": lambda request: _server_document(request, "issuer-mismatch", issuer=origin(request)),
    "noclientid": lambda request: _server_document(
        request,
        "noclientid",
        registration_endpoint=f"{origin(request)}/{PREFIX}/noclientid/register",
        client_id_metadata_document_supported=False,
    ),
    "nopkce": lambda request: _server_document(request, "nopkce", code_challenge_methods_supported=None),
    "plain-pkce": lambda request: _server_document(request, "plain-pkce", code_challenge_methods_supported=["plain"]),
    "noidentity": lambda request: _server_document(
        request, "noidentity", registration_endpoint=None, client_id_metadata_document_supported=False
    ),
}


def _metadata_url(case):
    if case == "other-origin":
        return lambda request: (
            f"http://localhost:{request.get_port()}/.well-known/oauth-protected-resource/{PREFIX}/{case}"
        )
    if case == "redirect":
        return lambda request: f"{origin(request)}/{PREFIX}/redirect/metadata"
    return None


HOSTILE_RESOURCES = {case: Resource(f"{PREFIX}/{case}", metadata_url=_metadata_url(case)) for case in CASES}

hostile_endpoint = endpoint_view(HOSTILE_RESOURCES)


def resource_document(request, resource_path):
    """The hostile metadata document at the well-known URI for resource_path, or None."""
    prefix, _, case = resource_path.partition("/")
    if prefix != PREFIX or case not in CASES or case == "redirect":
        return None
    if case == "other-origin" and request.get_host().split(":")[0] != "localhost":
        # Only on the other origin: a client that falls back to its own
        # origin's well-known URI finds nothing either.
        return None
    return JsonResponse(CASES[case](request, resource_path))


def server_document(request, issuer_path):
    """The variant server's RFC 8414 document for issuer_path, or None."""
    prefix, _, case = issuer_path.partition("/")
    if prefix != PREFIX or case not in SERVERS:
        return None
    return JsonResponse(SERVERS[case](request))


@require_GET
def redirect_metadata(request):
    response = HttpResponse(status=302)
    response["Location"] = f"{origin(request)}/{PREFIX}/redirect/metadata-moved"
    return response


@require_GET
def moved_metadata(request):
    return JsonResponse(CASES["redirect"](request, f"{PREFIX}/redirect"))


@csrf_exempt
@require_POST
def register_without_client_id(request):
    """RFC 7591 answered with everything but the client_id."""
    try:
        metadata = json.loads(request.body)
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict):
        return JsonResponse({"error": "invalid_client_metadata"}, status=400)
    metadata.pop("client_id", None)
    metadata["client_id_issued_at"] = 0
    return JsonResponse(metadata, status=201)
