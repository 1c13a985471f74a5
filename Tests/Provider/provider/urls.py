from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider import urls as dot_urls

from . import testing, views

# One "oauth2_provider" namespace: the OAuth endpoints under /o/, the RFC 8414
# and RFC 9728 metadata at the root, so that the issuer is the bare origin and
# strict RFC 8414 clients find <issuer>/.well-known/oauth-authorization-server.
# DOT's application-management and OIDC views are left out.
oauth2_patterns = dot_urls.metadata_urlpatterns + [path("o/", include(dot_urls.base_urlpatterns))]

urlpatterns = [
    path("", include((oauth2_patterns, dot_urls.app_name))),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("api/me", views.me, name="api-me"),
    path("api/admin", views.admin, name="api-admin"),
    # For the test harness only: what the token endpoint saw, whether a grant is
    # alive, a held token response. See provider/testing.py.
    path("test/token-requests", testing.token_requests, name="test-token-requests"),
    path("test/grants", testing.grants, name="test-grants"),
    path("test/delay-next-token-response", testing.delay_next_token_response, name="test-delay-next-token-response"),
    path("test/redirect", testing.redirect, name="test-redirect"),
]
