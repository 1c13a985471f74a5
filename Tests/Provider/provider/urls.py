from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider import urls as dot_urls

from django.http import JsonResponse

from . import cimd, client_assertions, hostile, oidc, resources, testing, views

# One "oauth2_provider" namespace: the OAuth endpoints under /o/, the RFC 8414
# and RFC 9728 metadata at the root, so that the issuer is the bare origin and
# strict RFC 8414 clients find <issuer>/.well-known/oauth-authorization-server.
# Of DOT's OIDC views the discovery document goes to the root too (OIDC
# Discovery §4: <issuer>/.well-known/openid-configuration), the JWKS, userinfo
# and logout endpoints under /o/ with the others. DOT's application-management
# views are left out.
OIDC_DISCOVERY = "oidc-connect-discovery-info"
oidc_discovery = [pattern for pattern in dot_urls.oidc_urlpatterns if pattern.name == OIDC_DISCOVERY]
oidc_endpoints = [pattern for pattern in dot_urls.oidc_urlpatterns if pattern.name != OIDC_DISCOVERY]
# DOT's path forms of the two well-known documents reflect any path into the
# issuer or resource (/.well-known/oauth-authorization-server/anything names
# issuer <origin>/anything): here only the resources and servers that exist
# have one (resource_metadata and server_metadata below).
PATH_FORMS = ("oauth-server-metadata-issuer", "oauth-resource-metadata-path")
root_metadata = [pattern for pattern in dot_urls.metadata_urlpatterns if pattern.name not in PATH_FORMS]
oauth2_patterns = (
    root_metadata
    + oidc_discovery
    # RFC 7591 registration at /o/register/, RFC 7592 at /o/register/<client_id>/.
    + [path("o/", include(dot_urls.base_urlpatterns + oidc_endpoints + dot_urls.dcr_urlpatterns))]
)


def _not_found():
    return JsonResponse({"error": "not_found"}, status=404)


def resource_metadata(request, resource_path):
    """RFC 9728 path form: the metadata of resources/<name> and the hostile ones."""
    view = resources.RESOURCE_METADATA_VIEWS.get(resource_path.strip("/"))
    if view is not None:
        return view(request)
    return hostile.resource_document(request, resource_path.strip("/")) or _not_found()


def server_metadata(request, issuer_path):
    """RFC 8414 path form: the hostile variant servers only."""
    return hostile.server_document(request, issuer_path.strip("/")) or _not_found()


urlpatterns = [
    path("", include((oauth2_patterns, dot_urls.app_name))),
    path(".well-known/oauth-protected-resource/<path:resource_path>", resource_metadata),
    path(".well-known/oauth-authorization-server/<path:issuer_path>", server_metadata),
    # Protected resources with their own RFC 9728 metadata (provider/resources.py)
    # and hostile ones (provider/hostile.py).
    path("res/<str:name>/<str:endpoint>", resources.resource_endpoint, name="resource"),
    path("hostile/redirect/metadata", hostile.redirect_metadata),
    path("hostile/redirect/metadata-moved", hostile.moved_metadata),
    path("hostile/noclientid/register", hostile.register_without_client_id),
    path("hostile/<str:name>/<str:endpoint>", hostile.hostile_endpoint, name="hostile-resource"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("api/me", views.me, name="api-me"),
    path("api/admin", views.admin, name="api-admin"),
    path("api/echo", views.echo, name="api-echo"),
    # For the test harness only: what the token endpoint saw, whether a grant is
    # alive, a held token response. See provider/testing.py.
    path("test/token-requests", testing.token_requests, name="test-token-requests"),
    path("test/grants", testing.grants, name="test-grants"),
    path("test/delay-next-token-response", testing.delay_next_token_response, name="test-delay-next-token-response"),
    path("test/redirect", testing.redirect, name="test-redirect"),
    path("test/moved-to-localhost/<path:rest>", testing.moved_to_localhost, name="test-moved-to-localhost"),
    path("test/expire-access-token", testing.expire_access_token, name="test-expire-access-token"),
    # OpenID Connect and RFC 7523 checks: see provider/oidc.py and
    # provider/client_assertions.py.
    path("test/rotate-signing-key", oidc.rotate_signing_key_view, name="test-rotate-signing-key"),
    path("test/jwks-outage", oidc.jwks_outage_view, name="test-jwks-outage"),
    path("test/client-keys", client_assertions.client_keys, name="test-client-keys"),
    path("test/jwt-client-token", client_assertions.jwt_client_token, name="test-jwt-client-token"),
    # Clients that configure themselves: what they fetched, a server that forgot
    # a registration, the CAs of client ID metadata documents on 127.0.0.1.
    path("test/discovery-requests", testing.discovery_requests, name="test-discovery-requests"),
    path("test/forget-client", testing.forget_client, name="test-forget-client"),
    path("test/cimd-trust", cimd.cimd_trust, name="test-cimd-trust"),
]
