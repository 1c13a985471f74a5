"""RFC 7523 JWT assertions, checked by a token endpoint of the test provider's own.

DOT authenticates clients by secret only (client_secret_basic/_post): it has
no private_key_jwt nor client_secret_jwt (OpenID Connect Core §9), nor the
JWT-bearer grant. This endpoint lets a client's assertions be checked against a
real verifier (jwcrypto) all the same. Its tokens are random strings that no
other endpoint knows (/api/me refuses them).

POST /test/client-keys   (JSON: {"client_id": ID, "jwk": {...public JWK...}})
     Registers a public key (RSA, EC, OKP; a private JWK is reduced to its
     public part) for private_key_jwt assertions of that client id (any
     string). A key with the `kid` of one registered before replaces it.
     {"client_id": ID, "kid": KID, "keys": N}; KID is the JWK's `kid`, or its
     RFC 7638 thumbprint when it has none.
GET  /test/client-keys?client_id=ID    {"client_id": ID, "keys": [public JWKs]}
DELETE /test/client-keys?client_id=ID  forgets that client's keys: {"client_id": ID, "keys": 0}

POST /test/jwt-client-token   (form)
     grant_type=client_credentials
       &client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer
       &client_assertion=JWT [&client_id=ID] [&scope=...]
         RFC 7523 §2.2 client authentication: RS256, PS256, ES256, EdDSA with a
         key registered above (private_key_jwt), HS256 with the secret of one
         of the run's confidential clients (client_secret_jwt).
     grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT [&scope=...]
         RFC 7523 §2.1 authorization grant: `iss` is a client with a registered
         key (or a confidential client's secret, HS256), `sub` a username.
     Checks, in this order: the form, the alg, `iss` (and `sub`) identify a
     client with a key, the signature, `iss` == `sub` == client_id (client
     authentication) or `sub` a user (grant), `aud` (this endpoint's URL or the
     issuer), `exp` (in the future, at most MAX_LIFETIME away), `iat`, `nbf`,
     `jti` (present, never seen before).
     200 {"access_token": RANDOM, "token_type": "Bearer", "expires_in": 3600, "scope": "read write"}
     401 {"error": "invalid_client", "error_description": WHICH CHECK FAILED}
         for a client assertion; 400 {"error": "invalid_grant", ...} for the
         grant's assertion; 400 invalid_request, unsupported_grant_type or
         invalid_scope for a malformed request.
GET  /test/jwt-client-token[?client_id=ID]
     {"assertions": [{"client_id", "grant_type", "alg", "kid", "subject", "outcome"}, ...]}
     What each POST presented (never the assertion), in order; outcome is "ok"
     or the error_description sent.
"""

import json
import secrets
import threading
import time

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from jwcrypto import jwk, jws
from jwcrypto.common import JWException, base64url_decode, base64url_encode

from .testing import _bad_request, _loopback_only

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ENDPOINT_PATH = "/test/jwt-client-token"
# The algorithms accepted, and the key type each needs.
ASYMMETRIC_ALGS = {"RS256": "RSA", "PS256": "RSA", "ES256": "EC", "EdDSA": "OKP"}
SYMMETRIC_ALGS = {"HS256"}
# An assertion is short-lived: exp at most this far ahead (plus LEEWAY).
MAX_LIFETIME = 300
LEEWAY = 10
TOKEN_LIFETIME = 3600


class _Registry:
    """The registered keys and secrets, the jtis seen, the log: in memory, behind a lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.keys = {}  # client_id -> {kid: JWK (public)}
        self.secrets = {}  # client_id -> plaintext secret (the run's confidential clients)
        self.seen_jtis = set()  # (iss, jti)
        self.log = []


registry = _Registry()


def register_client_secrets(client_secrets):
    """serve.py hands over the plaintext secrets of the run's confidential
    clients (DOT keeps only their hashes): the HS256 keys of client_secret_jwt."""
    with registry.lock:
        registry.secrets.update({client_id: secret for client_id, secret in client_secrets.items() if secret})


class AssertionRefused(Exception):
    pass


def _kid(key):
    return key.get("kid") or key.thumbprint()


@csrf_exempt
@_loopback_only
@require_http_methods(["GET", "POST", "DELETE"])
def client_keys(request):
    if request.method == "POST":
        try:
            body = json.loads(request.body)
            client_id = body["client_id"]
            key = jwk.JWK(**body["jwk"])
        except (ValueError, KeyError, TypeError, JWException) as error:
            return _bad_request(f"a JSON body {{'client_id': ..., 'jwk': {{...}}}} with a valid JWK is required: {error}")
        if not isinstance(client_id, str) or not client_id:
            return _bad_request("client_id must be a non-empty string")
        if key.get("kty") not in ("RSA", "EC", "OKP"):
            return _bad_request("the jwk must be an RSA, EC or OKP key (client_secret_jwt uses the client's secret)")
        public = jwk.JWK(**json.loads(key.export_public()))
        kid = _kid(public)
        with registry.lock:
            keys = registry.keys.setdefault(client_id, {})
            keys[kid] = public
            count = len(keys)
        return JsonResponse({"client_id": client_id, "kid": kid, "keys": count})
    client_id = request.GET.get("client_id")
    if not client_id:
        return _bad_request("client_id is required")
    with registry.lock:
        if request.method == "DELETE":
            registry.keys.pop(client_id, None)
            return JsonResponse({"client_id": client_id, "keys": 0})
        keys = [json.loads(key.export_public()) for key in registry.keys.get(client_id, {}).values()]
    return JsonResponse({"client_id": client_id, "keys": keys})


def _segment(text, what):
    try:
        value = json.loads(base64url_decode(text))
    except ValueError:
        raise AssertionRefused(f"the assertion's {what} is not base64url JSON") from None
    if not isinstance(value, dict):
        raise AssertionRefused(f"the assertion's {what} is not a JSON object")
    return value


def _number(claims, name):
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AssertionRefused(f"{name} is missing or not a number")
    return value


def _verify(assertion, grant, entry, form_client_id=None):
    """Checks the assertion; returns the client id (the subject too, for the grant)."""
    parts = assertion.split(".")
    if len(parts) != 3:
        raise AssertionRefused("the assertion is not a compact JWS (three parts)")
    header = _segment(parts[0], "header")
    claims = _segment(parts[1], "payload")
    alg = header.get("alg")
    entry["alg"] = alg if isinstance(alg, str) else None
    entry["kid"] = header.get("kid") if isinstance(header.get("kid"), str) else None
    if isinstance(claims.get("iss"), str):
        entry["client_id"] = claims["iss"]
    if not isinstance(alg, str) or alg.lower() == "none":
        raise AssertionRefused("alg none is not accepted")
    if alg not in ASYMMETRIC_ALGS and alg not in SYMMETRIC_ALGS:
        raise AssertionRefused(f"alg {alg} is not accepted (RS256, PS256, ES256, EdDSA, HS256)")
    if "crit" in header:
        raise AssertionRefused("crit header parameters are not understood")

    issuer = claims.get("iss")
    subject = claims.get("sub")
    if not isinstance(issuer, str) or not issuer:
        raise AssertionRefused("iss is missing")
    if not isinstance(subject, str) or not subject:
        raise AssertionRefused("sub is missing")
    entry["client_id"] = issuer
    if grant:
        entry["subject"] = subject

    with registry.lock:
        if alg in SYMMETRIC_ALGS:
            secret = registry.secrets.get(issuer)
            candidates = [] if secret is None else [jwk.JWK(kty="oct", k=base64url_encode(secret.encode("utf-8")))]
            if not candidates:
                raise AssertionRefused(f"{issuer!r} is not a confidential client of this run (HS256 needs its secret)")
        else:
            registered = registry.keys.get(issuer, {})
            if not registered:
                raise AssertionRefused(f"no key registered for {issuer!r}")
            if entry["kid"] is not None:
                candidates = [registered[entry["kid"]]] if entry["kid"] in registered else []
                if not candidates:
                    raise AssertionRefused(f"no key with kid {entry['kid']!r} registered for {issuer!r}")
            else:
                candidates = [key for key in registered.values() if key.get("kty") == ASYMMETRIC_ALGS[alg]]
                if not candidates:
                    raise AssertionRefused(f"no {ASYMMETRIC_ALGS[alg]} key registered for {issuer!r}")

    for key in candidates:
        token = jws.JWS()
        try:
            token.deserialize(assertion)
            token.allowed_algs = [alg]
            token.verify(key, alg=alg)
            break
        except (JWException, ValueError, TypeError):
            continue
    else:
        raise AssertionRefused("the signature does not verify with the client's key")

    if not grant and subject != issuer:
        raise AssertionRefused("sub must equal iss (the client_id)")
    if not grant and form_client_id and form_client_id != issuer:
        raise AssertionRefused("client_id differs from the assertion's iss")
    if grant:
        from django.contrib.auth import get_user_model

        if not get_user_model().objects.filter(username=subject).exists():
            raise AssertionRefused(f"sub {subject!r} is not a user")

    base = settings.BASE_URL
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    accepted = {base + ENDPOINT_PATH, base, base + "/"}
    if not any(isinstance(value, str) and value in accepted for value in audiences):
        raise AssertionRefused(f"aud must be {base + ENDPOINT_PATH} (or the issuer {base})")

    now = time.time()
    expires = _number(claims, "exp")
    if expires <= now:
        raise AssertionRefused("the assertion has expired (exp)")
    if expires > now + MAX_LIFETIME + LEEWAY:
        raise AssertionRefused(f"exp is more than {MAX_LIFETIME} s away")
    issued = _number(claims, "iat")
    if issued > now + LEEWAY:
        raise AssertionRefused("iat is in the future")
    if "nbf" in claims and _number(claims, "nbf") > now + LEEWAY:
        raise AssertionRefused("the assertion is not valid yet (nbf)")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti:
        raise AssertionRefused("jti is missing")
    with registry.lock:
        if (issuer, jti) in registry.seen_jtis:
            raise AssertionRefused("jti has been used before (replay)")
        registry.seen_jtis.add((issuer, jti))
    return issuer, subject


def _token_response(scope):
    return JsonResponse(
        {
            "access_token": secrets.token_urlsafe(32),
            "token_type": "Bearer",
            "expires_in": TOKEN_LIFETIME,
            "scope": scope,
        }
    )


def _scope(request):
    from oauth2_provider.settings import oauth2_settings

    scope = request.POST.get("scope")
    if scope is None:
        return " ".join(oauth2_settings.DEFAULT_SCOPES)
    unknown = [value for value in scope.split() if value not in oauth2_settings.SCOPES]
    if unknown:
        raise ValueError(f"unknown scope: {' '.join(unknown)}")
    return " ".join(scope.split())


@csrf_exempt
@_loopback_only
@require_http_methods(["GET", "POST"])
def jwt_client_token(request):
    if request.method == "GET":
        client_id = request.GET.get("client_id")
        with registry.lock:
            entries = [dict(entry) for entry in registry.log if client_id is None or entry["client_id"] == client_id]
        return JsonResponse({"assertions": entries})

    grant_type = request.POST.get("grant_type")
    if grant_type == "client_credentials":
        if request.POST.get("client_assertion_type") != CLIENT_ASSERTION_TYPE:
            return _bad_request(f"client_assertion_type must be {CLIENT_ASSERTION_TYPE}")
        assertion = request.POST.get("client_assertion")
        if not assertion:
            return _bad_request("client_assertion is required")
        grant = False
    elif grant_type == JWT_BEARER_GRANT:
        assertion = request.POST.get("assertion")
        if not assertion:
            return _bad_request("assertion is required")
        grant = True
    else:
        return JsonResponse(
            {
                "error": "unsupported_grant_type",
                "error_description": f"grant_type must be client_credentials or {JWT_BEARER_GRANT}",
            },
            status=400,
        )
    try:
        scope = _scope(request)
    except ValueError as error:
        return JsonResponse({"error": "invalid_scope", "error_description": str(error)}, status=400)

    entry = {"client_id": None, "grant_type": grant_type, "alg": None, "kid": None, "subject": None, "outcome": None}
    error = "invalid_grant" if grant else "invalid_client"
    try:
        _verify(assertion, grant, entry, request.POST.get("client_id"))
    except AssertionRefused as refusal:
        entry["outcome"] = str(refusal)
        with registry.lock:
            registry.log.append(entry)
        return JsonResponse({"error": error, "error_description": str(refusal)}, status=400 if grant else 401)
    entry["outcome"] = "ok"
    with registry.lock:
        registry.log.append(entry)
    return _token_response(scope)
