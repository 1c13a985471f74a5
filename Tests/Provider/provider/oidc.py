"""OpenID Connect: the claims, the ID token signing key and its rotation.

DOT signs the ID tokens of an RS256 application with OIDC_RSA_PRIVATE_KEY and
publishes it, with OIDC_RSA_PRIVATE_KEYS_INACTIVE, in its JWKS document; a
key's `kid` is its RFC 7638 thumbprint. serve.py makes the key per run.

POST /test/rotate-signing-key   (form: keep_old=0|1, default 0)
     {"kid": NEW, "old_kid": OLD, "keep_old": false, "published_kids": [NEW]}
     A new RSA 2048 key signs every ID token from now on. keep_old=1: the keys
     published so far stay in the JWKS (inactive: they verify, they no longer
     sign); keep_old=0: the JWKS holds the new key only.

POST /test/jwks-outage   (form: status=503|500|0)
     {"status": STATUS}. From now on the JWKS endpoint answers that status (an
     outage of the key set while the token endpoint works); status=0 ends it.
"""

import json
import threading

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from jwcrypto import jws
from jwcrypto.common import base64url_decode
from oauth2_provider.models import AbstractApplication
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.utils import jwk_from_pem

from .keys import new_rsa_private_key_pem
from .testing import _bad_request, _loopback_only


def kid_of(pem):
    """The `kid` DOT gives the key: its RFC 7638 JWK thumbprint (SHA-256, base64url)."""
    return jwk_from_pem(pem).thumbprint()


def published_pems():
    """The signing key first, then the inactive ones: the JWKS document's order."""
    return [oauth2_settings.OIDC_RSA_PRIVATE_KEY, *oauth2_settings.OIDC_RSA_PRIVATE_KEYS_INACTIVE]


class Validator(OAuth2Validator):
    """DOT's validator with the standard profile and email claims of the users.

    The claims are given as callables, without a request parameter: DOT then
    lists them in the discovery document's `claims_supported`, and releases each
    only with its scope (`oidc_claim_scope`: name, given_name, family_name,
    preferred_username with `profile`; email, email_verified with `email`), in
    the ID token and at the userinfo endpoint alike.
    """

    def get_additional_claims(self):
        return {
            "name": lambda request: request.user.get_full_name() or request.user.get_username(),
            "given_name": lambda request: request.user.first_name,
            "family_name": lambda request: request.user.last_name,
            "preferred_username": lambda request: request.user.get_username(),
            "email": lambda request: request.user.email,
            # The run's users are made with their addresses: call them verified.
            "email_verified": lambda request: bool(request.user.email),
        }

    def save_bearer_token(self, token, request, *args, **kwargs):
        # The AT Protocol's token response names the account (`sub`), and a
        # client may refuse a token for another account than it expected
        # (issue 38). DOT's has no `sub`: add the user's, the ID token's `sub`,
        # to the answers of tokens issued for a resource (RFC 8707) only, so
        # that every other token response stays as DOT sends it. The token
        # dict is the response body (oauthlib serializes it after this call).
        result = super().save_bearer_token(token, request, *args, **kwargs)
        # When the user signed in for this token: RFC 9470's max_age check of
        # the resources (provider/resources.py).
        from .resources import auth_times

        auth_times.record(token, request)
        user = getattr(request, "user", None)
        if getattr(request, "resource", None) and user is not None and user.is_authenticated:
            token["sub"] = str(user.pk)
        return result

    def validate_jwt_bearer_token(self, token, scopes, request):
        # With OIDC on, DOT's resource endpoint takes a Bearer token that looks
        # like a JWT ("ey…", two dots) for an ID token and accepts a valid ID
        # token as an access token. An ID token is not an access token: treat
        # every Bearer token as before OIDC, as an access token.
        return self.validate_bearer_token(token, scopes, request)

    def _get_key_for_token(self, token):
        # DOT verifies an ID token it gets back (the id_token_hint of a logout)
        # with the application's current key only: after a rotation every ID
        # token issued before would be refused. Pick the key by the token's kid
        # among the published ones instead, as a relying party does; a token
        # whose key is no longer published is refused.
        try:
            header = json.loads(base64url_decode(token.split(".")[0]))
        except (ValueError, IndexError):
            raise jws.InvalidJWSObject("the token's header is not JSON") from None
        if isinstance(header, dict) and header.get("alg") == AbstractApplication.RS256_ALGORITHM:
            kid = header.get("kid")
            for pem in published_pems():
                key = jwk_from_pem(pem)
                if key.thumbprint() == kid:
                    return key
            return None
        return super()._get_key_for_token(token)


_rotation_lock = threading.Lock()

# The status the JWKS endpoint answers during an outage, or None.
_jwks_outage = {"status": None}


class JWKSOutageMiddleware:
    """Answers the JWKS endpoint with the outage's status while one is on."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        status = _jwks_outage["status"]
        if status is not None and request.path.endswith("/.well-known/jwks.json"):
            return JsonResponse({"error": "temporarily_unavailable"}, status=status)
        return self.get_response(request)


@csrf_exempt
@_loopback_only
@require_POST
def jwks_outage_view(request):
    status = request.POST.get("status", "")
    if status not in ("0", "500", "503"):
        return _bad_request("status must be 0, 500 or 503")
    _jwks_outage["status"] = None if status == "0" else int(status)
    return JsonResponse({"status": int(status)})


def rotate_signing_key(keep_old):
    """Replaces the signing key at run time; returns (new kid, old kid, published kids)."""
    with _rotation_lock:
        old = oauth2_settings.OIDC_RSA_PRIVATE_KEY
        new = new_rsa_private_key_pem()
        inactive = [old, *oauth2_settings.OIDC_RSA_PRIVATE_KEYS_INACTIVE] if keep_old else []
        # oauth2_settings caches a setting as an attribute of its own the first
        # time it is read, and reads settings.OAUTH2_PROVIDER again only after
        # reload() (on Django's setting_changed): set both. The signing key
        # changes last, so that every key that signs is published by then.
        settings.OAUTH2_PROVIDER["OIDC_RSA_PRIVATE_KEYS_INACTIVE"] = inactive
        settings.OAUTH2_PROVIDER["OIDC_RSA_PRIVATE_KEY"] = new
        oauth2_settings.OIDC_RSA_PRIVATE_KEYS_INACTIVE = inactive
        oauth2_settings.OIDC_RSA_PRIVATE_KEY = new
        return kid_of(new), kid_of(old), [kid_of(pem) for pem in published_pems()]


@csrf_exempt
@_loopback_only
@require_POST
def rotate_signing_key_view(request):
    keep_old = request.POST.get("keep_old", "0")
    if keep_old not in ("0", "1"):
        return _bad_request("keep_old must be 0 or 1")
    kid, old_kid, published = rotate_signing_key(keep_old == "1")
    return JsonResponse({"kid": kid, "old_kid": old_kid, "keep_old": keep_old == "1", "published_kids": published})
