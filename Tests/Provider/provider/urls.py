from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider import urls as dot_urls

from . import client_assertions, oidc, testing, views

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
oauth2_patterns = (
    dot_urls.metadata_urlpatterns
    + oidc_discovery
    + [path("o/", include(dot_urls.base_urlpatterns + oidc_endpoints))]
)

urlpatterns = [
    path("", include((oauth2_patterns, dot_urls.app_name))),
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
]
