"""Settings of the local OAuth 2.0 provider (django-oauth-toolkit).

Everything that changes between runs comes from the environment, set by
serve.py (which scripts/provider-start.sh starts):

PROVIDER_RUN_DIR               the run folder: the database lives there (required)
PROVIDER_BASE_URL              http://127.0.0.1:<port>, known once the server is bound
PROVIDER_SECRET_KEY            Django's signing key, random per run
PROVIDER_ACCESS_TOKEN_LIFETIME access token lifetime in seconds (default 3600)
PROVIDER_ISS                   "1": RFC 9207 `iss` in authorization responses (default)
PROVIDER_DEVICE_INTERVAL       device flow polling interval in seconds (default 1)
PROVIDER_REUSE_PROTECTION      "1": replaying a spent refresh token revokes its whole
                               token family (default "0")
PROVIDER_GRACE_PERIOD          seconds a rotated-out refresh token is still honoured
                               (default 0)
PROVIDER_OIDC_RSA_KEY          the PEM of the RSA key that signs ID tokens, made per run
                               (a test may rotate it: see provider/oidc.py)
PROVIDER_JWKS_MAX_AGE          the JWKS document's Cache-Control max-age (default 3600)
PROVIDER_LOGOUT_DELETES_TOKENS "1": RP-initiated logout revokes the user's tokens, as
                               DOT does by default (default "0")
PROVIDER_CIMD_CA_FILE          a PEM file of the CAs whose certificates a client ID
                               metadata document on 127.0.0.1 may have (read at each
                               fetch; see provider/cimd.py). Unset: none.
"""

import os
from pathlib import Path

RUN_DIR = Path(os.environ["PROVIDER_RUN_DIR"])
BASE_URL = os.environ.get("PROVIDER_BASE_URL", "http://127.0.0.1")

SECRET_KEY = os.environ.get("PROVIDER_SECRET_KEY") or os.urandom(32).hex()
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
    "provider",
]

MIDDLEWARE = [
    # First: it records the status the client gets, and holds a token response
    # (when a test asks) only once everything else is done. See provider/testing.py.
    "provider.testing.TokenEndpointLogMiddleware",
    # A key set outage a test turns on and off (provider/oidc.py).
    "provider.oidc.JWKSOutageMiddleware",
    # What a client fetched to configure itself (provider/testing.py).
    "provider.testing.DiscoveryLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]

ROOT_URLCONF = "provider.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": RUN_DIR / "db.sqlite3",
        # The server is threaded: let a writer wait for another instead of failing.
        # IMMEDIATE takes the write lock when a transaction begins: a deferred
        # transaction that reads and then writes fails at once with "database is
        # locked" when another writer holds the lock, whatever the timeout.
        # WAL: readers never wait for the writer nor it for them, and a commit
        # is an append (synchronous=NORMAL: no fsync but at checkpoints; a
        # test database need not survive a power cut). In the default journal
        # mode, a login at the start of a loaded full run waited out the 20 s
        # behind the other writers and failed with "database is locked".
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's default PBKDF2 costs a second of CPU per check; user passwords and the
# hashed client secrets are checked on every login and token request, and the
# tests make many. Still PBKDF2, with few iterations: this provider only ever
# holds throwaway test credentials.
PASSWORD_HASHERS = ["provider.hashers.FastPBKDF2PasswordHasher"]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/accounts/login/"

USE_TZ = True
TIME_ZONE = "UTC"
USE_I18N = False
STATIC_URL = "/static/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": "INFO"},
}


def _pkce_required(client_id):
    """PKCE is mandatory for public clients; a confidential client may use it."""
    from oauth2_provider.models import get_application_model

    application = get_application_model().objects.filter(client_id=client_id).first()
    return application is None or application.client_type == application.CLIENT_PUBLIC


def _verification_uri_complete(user_code):
    return f"{BASE_URL}/o/device/?user_code={user_code}"


OAUTH2_PROVIDER = {
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(os.environ.get("PROVIDER_ACCESS_TOKEN_LIFETIME", "3600")),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # Rotation on. By default no grace period (a refresh token used once is dead)
    # and no reuse protection (replaying it is refused, nothing else happens).
    # Within a grace period DOT answers a replay of the token just rotated out
    # with the tokens that rotation issued; with reuse protection a replay
    # outside it revokes every refresh token of the grant (the token family).
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": int(os.environ.get("PROVIDER_GRACE_PERIOD", "0")),
    "REFRESH_TOKEN_REUSE_PROTECTION": os.environ.get("PROVIDER_REUSE_PROTECTION", "0") == "1",
    "PKCE_REQUIRED": _pkce_required,
    "SCOPES": {
        "read": "Read your data",
        "write": "Change your data",
        "admin": "Administer the service",
        # OpenID Connect: `openid` makes an authorization request an OIDC one (an
        # ID token comes with the tokens); `profile` and `email` release claims.
        "openid": "Sign you in (OpenID Connect)",
        "profile": "Your name and username",
        "email": "Your email address",
    },
    "DEFAULT_SCOPES": ["read", "write"],
    # The consent form is shown on every authorization request.
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH_DEVICE_VERIFICATION_URI": f"{BASE_URL}/o/device/",
    "OAUTH_DEVICE_VERIFICATION_URI_COMPLETE": _verification_uri_complete,
    "DEVICE_FLOW_INTERVAL": int(os.environ.get("PROVIDER_DEVICE_INTERVAL", "1")),
    # RFC 9700 gates (DOT 3.4): behave as the BCP asks, except that the password
    # grant stays allowed because the tests exercise it.
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": os.environ.get("PROVIDER_ISS", "1") == "1",
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    # OpenID Connect. Only a request with the `openid` scope is an OIDC one: any
    # other behaves as a plain OAuth 2.0 request did before OIDC was on.
    "OIDC_ENABLED": True,
    # The issuer is the bare origin, as in the RFC 8414 metadata: ID tokens'
    # `iss`, the discovery document's `issuer` and the RFC 9207 `iss` agree.
    "OIDC_ISS_ENDPOINT": BASE_URL,
    # RS256 with a key made per run; /test/rotate-signing-key replaces it at run
    # time (the old one may stay published in the JWKS, as an inactive key).
    "OIDC_RSA_PRIVATE_KEY": os.environ.get("PROVIDER_OIDC_RSA_KEY", ""),
    "OIDC_RSA_PRIVATE_KEYS_INACTIVE": [],
    "OIDC_JWKS_MAX_AGE_SECONDS": int(os.environ.get("PROVIDER_JWKS_MAX_AGE", "3600")),
    # The run's clients are code-flow clients: DOT would list the hybrid
    # response types too (they fail with unauthorized_client). List what works.
    "OIDC_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    # DOT's default revokes every token of the user (for every client) at logout:
    # on a provider shared by tests running in parallel that would pull tokens
    # from under the others, so it is opt-in (--logout-deletes-tokens).
    "OIDC_RP_INITIATED_LOGOUT_DELETE_TOKENS": os.environ.get("PROVIDER_LOGOUT_DELETES_TOKENS", "0") == "1",
    # Adds the profile and email claims, picks the ID token's key by kid.
    "OAUTH2_VALIDATOR_CLASS": "provider.oidc.Validator",
    # Clients that configure themselves (issue 38). RFC 7591 registration open
    # to anyone (a public client registers itself, as MCP clients do), with
    # RFC 7592 management (read, update, delete with the registration access
    # token, rotated on update) at <issuer>/o/register/<client_id>/.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    # Client ID metadata documents: an https URL as client_id. DOT's fetcher
    # plus https on 127.0.0.1 with the tests' CAs (provider/cimd.py).
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "provider.cimd.LoopbackMetadataFetcher",
    # DOT refuses a URL whose fetch failed for 60 s; a test that serves its
    # document a moment late (or fixes it) must not wait for that.
    "CIMD_FAILURE_BACKOFF_SECONDS": 0,
}
