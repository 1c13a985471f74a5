#!/usr/bin/env python3
"""The OpenID provider of the conformance suite (Tests/ConformanceTests/README.md).

It behaves as the OpenID Foundation's conformance suite does in its relying-party
test modules (`oidcc-client-test-*`, openid-certification/conformance-suite,
src/main/java/net/openid/conformance/openid/client): one issuer per module run,
`http://127.0.0.1:PORT/<alias>/<module>`, whose discovery document, key set,
authorization, token, userinfo and end-session endpoints do what that module
describes (a wrong `iss`, a flipped signature, rotated keys, ...). Written from
the modules' published behaviour; none of the suite's code is copied.

Tokens are signed with jwcrypto (on pyca/cryptography, OpenSSL): an
implementation of JOSE independent of the library under test.

It prints `READY <port> <mtls-port> <folder>` when it listens on 127.0.0.1 and
exits when its stdin closes, so it never outlives the test process that started
it. The second port is the same provider over TLS asking for a client
certificate (the suite's `base_mtls_url`; the certificate is asked for, and the token
endpoint of the mtls module requires it), with a throw-away CA made at start in
<folder>: `ca.pem`, which issued the server's certificate and the client's
(`client.pem`, `client.key`, subject CN `oidf-rp`). Besides the
provider's endpoints, `GET <issuer>/_log` answers what the relying party asked
of it (endpoint, where the bearer token came, the client authentication), for
the tests to hold the library to a module's "must not proceed"; and
`POST <issuer>/_client` (form `backchannel_logout_uri=...`) sets the static
client's back-channel logout URI, as the suite's tester configures it.

A FAPI 2.0 module is a new entry of MODULES whose options the endpoints read
(see the comment there); the rest of the provider is shared.
"""

import base64
import hashlib
import html
import ipaddress
import json
import datetime
import os
import re
import secrets
import shutil
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from jwcrypto import jwk, jws

CLIENT_ID = "oidf-rp"
CLIENT_SECRET = "oidf-rp-secret-0123456789abcdef0123456789"
REDIRECT_URI = "https://rp.example/callback"
MTLS_PORT = None
POST_LOGOUT_REDIRECT_URI = "https://rp.example/logged-out"
# The static client's registered key for request objects (its `jwks`, public
# part): made at start by make_client_request_object_key, the private key left
# for the client in <folder>/client-request-object.key.
CLIENT_REQUEST_OBJECT_KID = "oidf-rp-request-object"
CLIENT_REQUEST_OBJECT_JWK = None

# The user of every module (the suite's own test user has this subject in the
# aggregated and distributed claims modules).
USER = {
    "sub": "user-subject-1234531",
    "name": "Demo T. User",
    "given_name": "Demo",
    "family_name": "User",
    "email": "user@example.com",
    "email_verified": True,
    "phone_number": "+1 555 0100",
    "address": {"street_address": "1 Main St", "locality": "Springfield", "country": "US"},
}
SCOPE_CLAIMS = {
    "profile": ["name", "given_name", "family_name"],
    "email": ["email", "email_verified"],
    "phone": ["phone_number"],
    "address": ["address"],
}

ALL_SIGNING_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

# What each module changes. Options (all optional):
#   id_token_alg       the ID token's alg ("none", "HS256", ...); RS256 otherwise
#   algs_supported     id_token_signing_alg_values_supported (default: none + every public-key alg)
#   keys               (rsa, p256, secp256k1, ed25519) signing keys in the key set (default 2, 2, 1, 1)
#   kids               whether signing keys have a kid (default True)
#   claims             surgery on the ID token's claims: a function of the claims
#   refresh_claims     the same, on the ID tokens of refresh responses only
#   flip_signature     flip the ID token signature's bits (XOR 0x5A)
#   rotate_on_second   rotate the signing keys when the second authorization request comes
#   rotate_before_sign rotate the signing keys right before each ID token is signed
#   userinfo           surgery on the userinfo answer: a function of (session, claims)
#   bearer             where the userinfo endpoint takes the token: "header", "body" or "any"
#   signed_userinfo    answer userinfo as an RS256 JWT with iss and aud
#   require_basic      the token endpoint accepts client_secret_basic only
#   require_scope      the authorization request's scope must name one of these
#   refresh            issue refresh tokens and offer the refresh_token grant
#   metadata           surgery on the discovery document: a function of (session, document)
#   jwks_suffix        serve the key set at jwks<random> (changes per run)
#   mtls               mtls_endpoint_aliases names the token endpoint on the mutual TLS
#                      port (userinfo is there too), and the token endpoint takes
#                      tls_client_auth only
#   webfinger          (WebFinger group) the syntax the module's WebFinger request must use for its
#                      resource, "acct" or "https" (the suite's validateWebfingerRequestResource); the
#                      issuer then has a random suffix of 10 characters as its last path segment
#                      (AddRandomSuffixToIssuerInServerConfiguration), where its discovery document
#                      is served; the other endpoints stay at <alias>/<module>/
#   form_post_error    the authorization request must have response_mode=form_post,
#                      max_age=0 and prompt=none (the suite's EnsureMaxAgeEqualsZeroAndPromptNone);
#                      the answer is an HTML form that posts error=login_required and
#                      the state to the redirect URI (CreateLoginRequiredErrorResponse)
#   request_uri        the request comes by reference (OpenID Connect Core 6.2, RFC 9101 5.2):
#                      the authorization request must carry request_uri, which the provider
#                      fetches; the object must be signed with this alg by the client's
#                      registered key (CLIENT_REQUEST_OBJECT_JWK), and its claims take the
#                      place of the query's parameters (CreateEffectiveAuthorizationRequestParameters)
#   backchannel        back-channel logout (see the block of that group below): ID tokens carry the
#                      session's sid, and the end-session endpoint POSTs a logout token to the
#                      client's backchannel_logout_uri, made as this option's dict says:
#                      "alg" ("none", "wrong": ES256 for this RS256 client) and "claims" (surgery)
MODULES = {
    "oidcc-client-test": {},
    "oidcc-client-test-nonce-invalid": {"claims": lambda c: c.update(nonce=c.get("nonce", "") + "1")},
    "oidcc-client-test-client-secret-basic": {"require_basic": True},
    "oidcc-client-test-scope-userinfo-claims": {"require_scope": ["profile", "email", "phone", "address"]},
    "oidcc-client-test-kid-absent-single-jwks": {"keys": (1, 1, 1, 1), "kids": False},
    "oidcc-client-test-kid-absent-multiple-jwks": {"keys": (3, 3, 3, 3), "kids": False},
    "oidcc-client-test-missing-iat": {"claims": lambda c: c.pop("iat")},
    "oidcc-client-test-missing-aud": {"claims": lambda c: c.pop("aud")},
    "oidcc-client-test-invalid-aud": {"claims": lambda c: c.update(aud=c["aud"] + "1")},
    "oidcc-client-test-idtoken-sig-none": {"id_token_alg": "none"},
    "oidcc-client-test-idtoken-sig-rs256": {"algs_supported": ["RS256"]},
    "oidcc-client-test-missing-sub": {"claims": lambda c: c.pop("sub")},
    "oidcc-client-test-invalid-sig-rs256": {"algs_supported": ["RS256"], "flip_signature": True},
    "oidcc-client-test-invalid-sig-es256": {"algs_supported": ["ES256"], "id_token_alg": "ES256", "flip_signature": True},
    "oidcc-client-test-invalid-sig-hs256": {"algs_supported": ["HS256"], "id_token_alg": "HS256", "flip_signature": True},
    "oidcc-client-test-invalid-iss": {"claims": lambda c: c.update(iss=c["iss"] + "1")},
    "oidcc-client-test-userinfo-invalid-sub": {"userinfo": lambda s, u: u.update(sub=u["sub"] + "invalid")},
    "oidcc-client-test-userinfo-bearer-header": {"bearer": "header"},
    "oidcc-client-test-userinfo-bearer-body": {"bearer": "body"},
    "oidcc-client-test-userinfo-signed": {"signed_userinfo": True},
    "oidcc-client-test-aggregated-claims": {"userinfo": lambda s, u: s.aggregated_claims(u)},
    "oidcc-client-test-distributed-claims": {"userinfo": lambda s, u: s.distributed_claims(u)},
    "oidcc-client-test-discovery-openid-config": {},
    "oidcc-client-test-discovery-jwks-uri-keys": {"jwks_suffix": True},
    "oidcc-client-test-discovery-issuer-mismatch": {"metadata": lambda s, m: m.update(issuer=m["issuer"] + "INVALID")},
    "oidcc-client-test-signing-key-rotation": {"rotate_on_second": True},
    "oidcc-client-test-signing-key-rotation-just-before-signing": {"rotate_before_sign": True},
    "oidcc-client-test-refresh-token": {"refresh": True},
    "oidcc-client-test-refresh-token-invalid-issuer": {
        "refresh": True,
        "refresh_claims": lambda c: c.update(iss=c["iss"] + "1"),
    },
    "oidcc-client-test-refresh-token-invalid-sub": {
        "refresh": True,
        "refresh_claims": lambda c: c.update(sub=c["sub"] + "1"),
    },
    "oidcc-client-test-rp-init-logout": {},
    "oidcc-client-test-mtls-endpoint-aliases": {"mtls": True},
    "oidcc-client-test-dynamic-registration": {},
    "oidcc-client-test-form-post-error": {"form_post_error": True},
    # Request objects by reference (the request_uri group): the static client is
    # registered with request_object_signing_alg RS256 and CLIENT_REQUEST_OBJECT_JWK
    # (EnsureRequestObjectSigningAlgIsRS256InClientMetadata). The module's
    # -signed-none sibling does not apply (README.md): the library signs every
    # request object it makes.
    "oidcc-client-test-request-uri-signed-rs256": {"request_uri": "RS256"},
    # WebFinger group (OpenID Connect Discovery 1.0 section 2): the client finds the
    # issuer from a user identifier, then discovers it.
    "oidcc-client-test-discovery-webfinger-acct": {"webfinger": "acct"},
    "oidcc-client-test-discovery-webfinger-url": {"webfinger": "https"},
}

# Back-channel logout (OpenID Connect Back-Channel Logout 1.0; the suite's
# openid/client/logout/*BackChannelLogout*): after the RP-initiated logout's end-session
# request, a logout token goes to the RP's backchannel_logout_uri; the module expects 200 for
# the valid one and 400 for each of the others (EnsureBackChannelLogoutUriResponseStatusCodeIs200/400).
MODULES.update({
    "oidcc-client-test-rp-backchannel-rpinitlogout": {"backchannel": {}},
    "oidcc-client-test-rp-backchannel-rpinitlogout-alg-none": {"backchannel": {"alg": "none"}},
    "oidcc-client-test-rp-backchannel-rpinitlogout-no-event": {"backchannel": {"claims": lambda c: c.pop("events")}},
    "oidcc-client-test-rp-backchannel-rpinitlogout-with-nonce": {
        "backchannel": {"claims": lambda c: c.update(nonce="logout_tokens_must_not_contain_a_nonce")},
    },
    "oidcc-client-test-rp-backchannel-rpinitlogout-wrong-alg": {"backchannel": {"alg": "wrong"}},
    "oidcc-client-test-rp-backchannel-rpinitlogout-wrong-aud": {"backchannel": {"claims": lambda c: c.update(aud=c["aud"] + "INVALID")}},
    "oidcc-client-test-rp-backchannel-rpinitlogout-wrong-event": {
        "backchannel": {"claims": lambda c: c.update(events={"http://schemas.openid.net/event/foobar": {}})},
    },
    "oidcc-client-test-rp-backchannel-rpinitlogout-wrong-iss": {"backchannel": {"claims": lambda c: c.update(iss=c["iss"] + "INVALID")}},
})


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def half_hash(value, alg):
    """at_hash and c_hash (OpenID Connect Core 3.1.3.6): the left half of the alg's hash."""
    bits = {"256": hashlib.sha256, "384": hashlib.sha384, "512": hashlib.sha512}
    digest = (hashlib.sha512 if alg == "EdDSA" else bits[alg[-3:]])(value.encode("ascii")).digest()
    return b64url(digest[: len(digest) // 2])


class Session:
    """One run of one module: its keys, codes, tokens and what the client asked."""

    def __init__(self, issuer, module):
        self.module = module
        self.options = MODULES[module]
        # Where the endpoints are; the issuer is the same but for the WebFinger modules' suffix.
        self.base = issuer
        suffix = secrets.token_hex(5) if self.options.get("webfinger") else ""
        self.issuer = issuer + "/" + suffix if suffix else issuer
        self.discovery_path = (suffix + "/" if suffix else "") + ".well-known/openid-configuration"
        self.lock = threading.Lock()
        self.log = []
        self.codes = {}
        self.access_tokens = {}
        self.refresh_tokens = {}
        self.issued_id_tokens = set()
        # Distributed claims: the access token of the claims source (src1).
        self.claims_access_token = None
        self.authorization_requests = 0
        # client_id -> (secret or None, redirect_uris, token_endpoint_auth_method)
        self.clients = {CLIENT_ID: (CLIENT_SECRET, [REDIRECT_URI], None)}
        self.jwks_path = "jwks" + (secrets.token_hex(5) if self.options.get("jwks_suffix") else "")
        # Back-channel logout: the OP session's id (the suite's GenerateSessionState makes a VSCHAR
        # one) and the static client's backchannel_logout_uri, which the test gives through _client.
        self.sid = secrets.token_urlsafe(15)
        self.backchannel_logout_uri = None
        self.make_keys()

    def record(self, event, **details):
        with self.lock:
            self.log.append(dict(event=event, **details))

    # Keys: as the suite's default key set, signing keys of four kinds without
    # an `alg` (two RSA, two P-256, one secp256k1, one Ed25519), plus one RSA
    # and one EC encryption key; one RSA key signs.
    #
    # A new session takes its RSA keys from RSA_POOL, distinct ones, with kids
    # of its own: 57 modules start at once, and three RSA-2048 keys each, made
    # under SESSIONS_LOCK on a loaded machine, kept the last module's first
    # request waiting past the client's 30 seconds. A rotation (fresh=True)
    # makes new ones, so the old key cannot verify what the new one signs.
    def make_keys(self, fresh=False):
        rsa, p256, k1, ed = self.options.get("keys", (2, 2, 1, 1))
        kids = self.options.get("kids", True)
        pooled = iter(secrets.SystemRandom().sample(RSA_POOL, rsa + 1)) if not fresh else None

        def rsa_key(**params):
            if pooled is None:
                return jwk.JWK.generate(kty="RSA", size=2048, **params)
            return jwk.JWK(**next(pooled), **params)

        def key(count, make, **params):
            made = []
            for _ in range(count):
                extra = {"kid": secrets.token_hex(8)} if kids else {}
                made.append(make(use="sig", **params, **extra))
            return made

        rsa_keys = key(rsa, rsa_key)
        ec_keys = key(p256, jwk.JWK.generate, kty="EC", crv="P-256")
        signing = (
            rsa_keys
            + ec_keys
            + key(k1, jwk.JWK.generate, kty="EC", crv="secp256k1")
            + key(ed, jwk.JWK.generate, kty="OKP", crv="Ed25519")
        )
        encryption = [
            rsa_key(use="enc", alg="RSA-OAEP", kid=secrets.token_hex(8)),
            jwk.JWK.generate(kty="EC", crv="P-256", use="enc", alg="ECDH-ES", kid=secrets.token_hex(8)),
        ]
        # The suite signs with a random one of its RSA keys; without kids, the
        # last one here, so that a client must get past the others every run.
        self.rsa_key = (rsa_keys[-1] if not kids else secrets.choice(rsa_keys)) if rsa_keys else None
        self.ec_key = secrets.choice(ec_keys) if ec_keys else None
        self.public_keys = [k.export_public(as_dict=True) for k in signing + encryption]

    def metadata(self):
        base = self.base + "/"
        document = {
            "issuer": self.issuer,
            "authorization_endpoint": base + "authorize",
            "token_endpoint": base + "token",
            "userinfo_endpoint": base + "userinfo",
            "jwks_uri": base + self.jwks_path,
            "registration_endpoint": base + "register",
            "end_session_endpoint": base + "end_session",
            "scopes_supported": ["openid", "phone", "profile", "email", "address", "offline_access"],
            "response_types_supported": ["code", "id_token code", "token code id_token", "id_token", "token id_token"],
            "response_modes_supported": ["query", "fragment", "form_post"],
            "grant_types_supported": ["authorization_code", "implicit"] + (["refresh_token"] if self.options.get("refresh") else []),
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "subject_types_supported": ["public", "pairwise"],
            "claim_types_supported": ["normal", "aggregated", "distributed"],
            "id_token_signing_alg_values_supported": self.options.get("algs_supported", ["none"] + ALL_SIGNING_ALGS),
            "userinfo_signing_alg_values_supported": ALL_SIGNING_ALGS,
            "code_challenge_methods_supported": ["S256"],
        }
        if self.options.get("request_uri"):
            # SetRequestUriParameterSupportedToTrueInServerConfiguration.
            document.update(request_uri_parameter_supported=True, require_request_uri_registration=False)
        if self.options.get("mtls"):
            # The suite's endpoints are all https, its token endpoint's alias on
            # the mutual TLS host; here the https one is the TLS port, where
            # userinfo goes too (a token got with a certificate is bound to it,
            # and a bound token is never sent over http).
            tls_base = "https://127.0.0.1:%d%s/" % (MTLS_PORT, urllib.parse.urlsplit(self.issuer).path)
            document["mtls_endpoint_aliases"] = {"token_endpoint": tls_base + "token"}
            document["userinfo_endpoint"] = tls_base + "userinfo"
            document["token_endpoint_auth_methods_supported"].append("tls_client_auth")
        surgery = self.options.get("metadata")
        if surgery:
            surgery(self, document)
        return document

    def sign(self, claims, alg, typ="JWT"):
        header = {"alg": alg}
        if typ:
            header["typ"] = typ
        if alg == "none":
            return b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode()) + "."
        if alg == "HS256":
            key = jwk.JWK(kty="oct", k=b64url(CLIENT_SECRET.encode()))
        else:
            key = self.ec_key if alg.startswith("ES") else self.rsa_key
            if "kid" in key:
                header["kid"] = key["kid"]
        token = jws.JWS(json.dumps(claims).encode())
        token.add_signature(key, alg=alg, protected=json.dumps(header))
        return token.serialize(compact=True)

    def id_token(self, client_id, nonce, access_token, refresh=False):
        if self.options.get("rotate_before_sign"):
            self.make_keys(fresh=True)
        alg = self.options.get("id_token_alg", "RS256")
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": USER["sub"], "aud": client_id, "iat": now, "exp": now + 300}
        if nonce:
            claims["nonce"] = nonce
        if self.options.get("backchannel") is not None:
            claims["sid"] = self.sid  # the suite's AddSidToIdTokenClaims
        if alg != "none":
            claims["at_hash"] = half_hash(access_token, alg)
        surgery = self.options.get("refresh_claims" if refresh else "claims")
        if surgery:
            surgery(claims)
        token = self.sign(claims, alg)
        if self.options.get("flip_signature"):
            head, payload, signature = token.split(".")
            token = head + "." + payload + "." + b64url(bytes(b ^ 0x5A for b in b64url_decode(signature)))
        with self.lock:
            self.issued_id_tokens.add(token)
        return token

    def logout_token(self):
        """GenerateLogoutTokenClaims, the module's surgery, then OIDCCSignLogoutToken (the client's
        RS256, a header without typ) or its alg-none and wrong-algorithm variants."""
        options = self.options["backchannel"]
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": USER["sub"],
            "aud": CLIENT_ID,
            "jti": secrets.token_hex(16),
            "sid": self.sid,
            "events": {"http://schemas.openid.net/event/backchannel-logout": {}},
            "iat": now,
            "exp": now + 120,
            "ignored_claim": "Logout Tokens MAY contain other Claims. Any Claims used that are not understood MUST be ignored.",
        }
        surgery = options.get("claims")
        if surgery:
            surgery(claims)
        alg = {"none": "none", "wrong": "ES256"}.get(options.get("alg"), "RS256")
        return self.sign(claims, alg, typ=None)

    def send_backchannel_logout(self):
        """CallRPBackChannelLogoutEndpoint: POST logout_token (and a parameter to ignore) to the
        client's backchannel_logout_uri; the status, body and Cache-Control it got go in the log."""
        if not self.backchannel_logout_uri:
            return self.record("backchannel_logout", error="the client has no backchannel_logout_uri")
        body = urllib.parse.urlencode({
            "logout_token": self.logout_token(),
            "ignored_parameter": "The POST body MAY contain other values in addition to logout_token. "
            "Values that are not understood by the implementation MUST be ignored.",
        }).encode()
        request = urllib.request.Request(
            self.backchannel_logout_uri, data=body, method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                status, headers, answer = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, headers, answer = error.code, error.headers, error.read()
        except OSError as error:
            return self.record("backchannel_logout", error=str(error))
        self.record(
            "backchannel_logout", status=status, body=answer.decode("utf-8", "replace"),
            cache_control=headers.get("Cache-Control", ""))

    def aggregated_claims(self, claims):
        """OpenID Connect Core 5.6.2's example: address and phone_number from src1, a JWT signed with alg none."""
        source = {"address": USER["address"], "phone_number": "+1 (310) 123-4567"}
        claims["_claim_names"] = {"address": "src1", "phone_number": "src1"}
        claims["_claim_sources"] = {"src1": {"JWT": self.sign(source, "none")}}
        claims.pop("address", None)
        claims.pop("phone_number", None)

    # Distributed claims (oidcc-client-test-distributed-claims; the suite's
    # OIDCCLoadUserInfoWithDistributedClaims): credit_score from src1, a claims
    # endpoint of this issuer with an access token of its own, which the
    # endpoint checks (OIDCCValidateBearerAccessTokenInClaimsEndpointRequest).
    def distributed_claims(self, claims):
        with self.lock:
            self.claims_access_token = secrets.token_urlsafe(15)
        claims["_claim_names"] = {"credit_score": "src1"}
        claims["_claim_sources"] = {"src1": {"endpoint": self.issuer + "/claims_endpoint", "access_token": self.claims_access_token}}


SESSIONS = {}
SESSIONS_LOCK = threading.Lock()
# RSA key material (no kid, no use) for new sessions; main() fills it. Six are
# enough for the most any module asks: three signing keys and one encryption key.
RSA_POOL = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def session_for(self, alias, module):
        issuer = "http://%s/%s/%s" % (self.headers.get("Host"), alias, module)
        with SESSIONS_LOCK:
            session = SESSIONS.get((alias, module))
            if session is None:
                session = SESSIONS[(alias, module)] = Session(issuer, module)
        return session

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        self.query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        self.form = {}
        if self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            self.form = dict(urllib.parse.parse_qsl(self.body.decode(), keep_blank_values=True))
        if url.path == "/.well-known/webfinger":
            return self.webfinger()
        if len(parts) < 3 or parts[1] not in MODULES:
            return self.json(404, {"error": "not_found"})
        alias, module, endpoint = parts[0], parts[1], "/".join(parts[2:])
        session = self.session_for(alias, module)
        handler = {
            session.discovery_path: self.discovery,
            session.jwks_path: self.jwks,
            "authorize": self.authorize,
            "token": self.token,
            "userinfo": self.userinfo,
            "end_session": self.end_session,
            "claims_endpoint": self.claims_endpoint,
            "register": self.register,
            "_log": self.show_log,
            "_client": self.configure_client,
        }.get(endpoint)
        if handler is None:
            return self.json(404, {"error": "not_found"})
        handler(session)

    def json(self, status, body, headers=()):
        self.reply(status, json.dumps(body).encode(), "application/json", headers)

    def reply(self, status, data, content_type, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def discovery(self, session):
        session.record("discovery")
        self.json(200, session.metadata())

    def webfinger(self):
        """WebFinger group: GET /.well-known/webfinger at the root of the host (RFC 7033 section 4),
        as the suite's TestDispatcher serves it: the resource names the run, as
        acct:ALIAS.MODULE@HOST or http(s)://HOST/ALIAS/MODULE; the answer is a JRD whose one link
        of rel http://openid.net/specs/connect/1.0/issuer has the module's issuer as its href
        (CreateWebfingerResponse; OpenID Connect Discovery 1.0 section 2)."""
        resource = self.query.get("resource")
        if resource is None:
            return self.json(400, {"error": "resource parameter missing"})
        acct = re.match(r"^acct:([a-zA-Z0-9_-]+)\.([a-zA-Z0-9_-]+)@.*$", resource, re.IGNORECASE)
        url = re.match(r"^https?://.*/([a-zA-Z0-9_-]+)/([a-zA-Z0-9_-]+)$", resource, re.IGNORECASE)
        match, syntax = (acct, "acct") if acct else (url, "https") if url else (None, None)
        if match is None or match.group(2) not in MODULES:
            return self.json(404 if match else 400, {"error": "no module run for this resource"})
        session = self.session_for(match.group(1), match.group(2))
        session.record("webfinger", resource=resource, rel=self.query.get("rel"), syntax=syntax)
        if session.options.get("webfinger") not in (None, syntax):
            return self.json(400, {"error": "invalid_request", "error_description": "this module expects a WebFinger request using %s syntax" % session.options["webfinger"]})
        jrd = {"subject": resource, "links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": session.issuer}]}
        self.reply(200, json.dumps(jrd).encode(), "application/jrd+json")

    def jwks(self, session):
        session.record("jwks")
        self.json(200, {"keys": session.public_keys})

    def show_log(self, session):
        with session.lock:
            self.json(200, list(session.log))

    def configure_client(self, session):
        """The static client's configuration as the suite's tester enters it: its backchannel_logout_uri."""
        session.backchannel_logout_uri = self.form.get("backchannel_logout_uri")
        self.json(200, {"backchannel_logout_uri": session.backchannel_logout_uri})

    def authorize(self, session):
        params = self.query
        if session.options.get("request_uri"):
            params = self.request_object_by_reference(session, params)
            if params is None:
                return
        nonce = params.get("nonce")
        # What the suite warns about in oidcc-client-test (CheckForInvalidCharsInNonce,
        # CheckNonceMaximumLength): URL-safe characters only, at most 43 of them.
        session.record(
            "authorization",
            scope=params.get("scope", ""),
            nonce=nonce is not None,
            nonce_interoperable=nonce is not None and 0 < len(nonce) <= 43 and all(c.isascii() and (c.isalnum() or c in "-_.~") for c in nonce),
            response_mode=params.get("response_mode"),
            max_age=params.get("max_age"),
            prompt=params.get("prompt"),
        )
        client = session.clients.get(params.get("client_id"))
        if client is None or params.get("redirect_uri") not in client[1]:
            return self.json(400, {"error": "invalid_request", "error_description": "unknown client or redirect_uri"})
        scopes = params.get("scope", "").split()
        required = session.options.get("require_scope")
        if params.get("response_type") != "code" or "openid" not in scopes or (required and not set(required) & set(scopes)):
            return self.json(400, {"error": "invalid_request", "error_description": "not what this module expects"})
        if session.options.get("form_post_error"):
            return self.form_post_error(params)
        code = secrets.token_urlsafe(24)
        with session.lock:
            session.codes[code] = params
            session.authorization_requests += 1
            rotate = session.options.get("rotate_on_second") and session.authorization_requests == 2
        if rotate:
            session.make_keys(fresh=True)
        query = urllib.parse.urlencode({"code": code, "state": params.get("state", "")})
        self.reply(302, b"", "text/plain", [("Location", params["redirect_uri"] + "?" + query)])

    def request_object_by_reference(self, session, query):
        """The request_uri modules: fetch the request object (FetchRequestUriAndExtractRequestObject),
        check it (AbstractOIDCCClientTest.validateRequestObject, EnsureRequestObjectWasSignedWith<alg>,
        EnsureAuthorizationHttpRequestContainsOpenIDScope, EnsureRequiredAuthorizationRequestParametersMatchRequestObject)
        and answer the effective parameters: the query's, replaced by the object's claims
        (CreateEffectiveAuthorizationRequestParameters). What the suite only warns about (iss, aud,
        other parameters that differ) is recorded, not refused. None after an error answer."""
        def refuse(description, error="invalid_request_object", **details):
            session.record("request_object", refused=description, **details)
            self.json(400, {"error": error, "error_description": description})

        uri = query.get("request_uri", "")
        if "request" in query or not uri:
            return refuse("the authorization request has no request_uri", "invalid_request")
        if urllib.parse.urlsplit(uri).scheme not in ("http", "https"):
            return refuse("request_uri is not an http(s) URL", "invalid_request_uri")
        try:
            with urllib.request.urlopen(urllib.request.Request(uri, method="GET"), timeout=10) as answer:
                content_type = answer.headers.get("Content-Type", "")
                text = answer.read(65536).decode("ascii").strip()
        except (OSError, ValueError, UnicodeError) as error:
            return refuse("could not fetch request_uri: %s" % error, "invalid_request_uri")
        parts = text.split(".")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1])) if len(parts) == 3 else None
        except (ValueError, IndexError):
            header = claims = None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return refuse("the request object is not a JWS with a JSON object as claims", content_type=content_type)
        alg = session.options["request_uri"]
        if header.get("alg") != alg:
            return refuse("the request object must be signed with %s" % alg, alg=header.get("alg"))
        try:
            verified = jws.JWS()
            verified.deserialize(text)
            verified.verify(jwk.JWK(**CLIENT_REQUEST_OBJECT_JWK), alg=alg)
        except Exception as error:  # jwcrypto's InvalidJWSSignature, InvalidJWSObject, ...
            return refuse("the request object's signature is not the client's registered key's: %s" % type(error).__name__, alg=alg)
        now = time.time()
        skew = 300
        if not isinstance(claims.get("exp"), (int, float)) or claims["exp"] < now - skew:
            return refuse("the request object has no exp or has expired")
        if isinstance(claims.get("iat"), (int, float)) and claims["iat"] > now + skew:
            return refuse("the request object's iat is in the future")
        if "openid" not in query.get("scope", "").split():
            return refuse("the query's scope must have openid (OpenID Connect Core 6.1, 6.2)")
        for name in ("response_type", "client_id"):
            if name not in query or (name in claims and claims[name] != query[name]):
                return refuse("the query's %s must be the request object's" % name)
        differing = sorted(
            name for name, value in query.items()
            if name not in ("response_type", "client_id", "request_uri") and name in claims and claims[name] != value
            and not (name == "scope" and value == "openid")
        )
        session.record(
            "request_object",
            request_uri=uri,
            content_type=content_type,
            alg=alg,
            kid=header.get("kid"),
            typ=header.get("typ"),
            iss_is_client=claims.get("iss") == query.get("client_id"),
            aud_is_issuer=claims.get("aud") == session.issuer or (isinstance(claims.get("aud"), list) and session.issuer in claims["aud"]),
            query=sorted(query),
            differing=differing,
            has_request_or_request_uri="request" in claims or "request_uri" in claims,
        )
        effective = {name: value for name, value in query.items() if name != "request_uri"}
        effective.update({name: value for name, value in claims.items() if isinstance(value, str)})
        return effective

    def form_post_error(self, params):
        """oidcc-client-test-form-post-error: max_age=0 with prompt=none cannot be met, so the answer
        is the form_post response (OAuth 2.0 Form Post Response Mode section 2) of an error,
        login_required (OpenID Connect Core 3.1.2.6), with the request's state; the suite stops
        the module when response_mode, max_age or prompt is not as required."""
        if params.get("response_mode") != "form_post" or params.get("max_age") != "0" or params.get("prompt") != "none":
            return self.json(400, {"error": "invalid_request", "error_description": "this module needs response_mode=form_post, max_age=0 and prompt=none"})
        fields = {"error": "login_required"}
        if "state" in params:
            fields["state"] = params["state"]
        inputs = "".join(
            '<input type="hidden" name="%s" value="%s"/>' % (html.escape(name), html.escape(value)) for name, value in fields.items()
        )
        page = (
            '<!DOCTYPE html><html><head><title>Submit This Form</title></head>'
            '<body onload="javascript:document.forms[0].submit()">'
            '<form method="post" action="%s">%s</form></body></html>' % (html.escape(params["redirect_uri"]), inputs)
        )
        self.reply(200, page.encode(), "text/html; charset=utf-8")

    def client_authentication(self):
        if isinstance(self.connection, ssl.SSLSocket) and "client_secret" not in self.form:
            # RFC 8705 section 2.1.2: the certificate's subject names the client.
            subject = dict(item[0] for item in (self.connection.getpeercert() or {}).get("subject", ()))
            if subject.get("commonName") == self.form.get("client_id"):
                return "tls_client_auth", self.form.get("client_id"), CLIENT_SECRET
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            return "client_secret_basic", urllib.parse.unquote_plus(user), urllib.parse.unquote_plus(password)
        if "client_secret" in self.form:
            return "client_secret_post", self.form.get("client_id"), self.form["client_secret"]
        return "none", self.form.get("client_id"), None

    def token(self, session):
        method, client_id, secret = self.client_authentication()
        grant = self.form.get("grant_type")
        session.record("token", grant_type=grant, client_authentication=method)
        wanted = "client_secret_basic" if session.options.get("require_basic") else "tls_client_auth" if session.options.get("mtls") else None
        client = session.clients.get(client_id)
        wanted = client[2] if client and client[2] else wanted
        if client is None or (secret != client[0] and method != "tls_client_auth") or (wanted and method != wanted):
            return self.json(401, {"error": "invalid_client"}, [("WWW-Authenticate", 'Basic realm="op"')])
        if grant == "authorization_code":
            with session.lock:
                request = session.codes.pop(self.form.get("code"), None)
            if request is None or self.form.get("redirect_uri") != request["redirect_uri"] or request.get("client_id") != client_id:
                return self.json(400, {"error": "invalid_grant"})
            challenge = request.get("code_challenge")
            if challenge and b64url(hashlib.sha256(self.form.get("code_verifier", "").encode()).digest()) != challenge:
                return self.json(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
            return self.issue(session, client_id, request.get("scope", ""), request.get("nonce"), refresh=False)
        if grant == "refresh_token" and session.options.get("refresh"):
            with session.lock:
                scope = session.refresh_tokens.pop(self.form.get("refresh_token"), None)
            if scope is None:
                return self.json(400, {"error": "invalid_grant"})
            # RFC 6749 section 6: no scope beyond the one originally granted.
            if "scope" in self.form and not set(self.form["scope"].split()) <= set(scope.split()):
                return self.json(400, {"error": "invalid_scope"})
            return self.issue(session, client_id, scope, None, refresh=True)
        return self.json(400, {"error": "unsupported_grant_type"})

    def issue(self, session, client_id, scope, nonce, refresh):
        access_token = secrets.token_urlsafe(24)
        with session.lock:
            session.access_tokens[access_token] = scope
        body = {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": scope,
            "id_token": session.id_token(client_id, nonce, access_token, refresh=refresh),
        }
        if session.options.get("refresh"):
            body["refresh_token"] = secrets.token_urlsafe(24)
            with session.lock:
                session.refresh_tokens[body["refresh_token"]] = scope
        self.json(200, body)

    def bearer_token(self, accepted):
        """The token and where it came: RFC 6750 section 2.1 (header), 2.2 (body), 2.3 (query)."""
        found = []
        header = self.headers.get("Authorization", "")
        if header[:7].lower() == "bearer ":
            found.append(("header", header[7:].strip()))
        if "access_token" in self.form:
            found.append(("body", self.form["access_token"]))
        if "access_token" in self.query:
            found.append(("query", self.query["access_token"]))
        places = [place for place, _ in found]
        if len(found) != 1 or (accepted != "any" and places != [accepted]):
            return places, None
        return places, found[0][1]

    def userinfo(self, session):
        places, token = self.bearer_token(session.options.get("bearer", "any"))
        session.record("userinfo", method=self.command, token_in=places)
        with session.lock:
            scope = session.access_tokens.get(token)
        if scope is None:
            return self.json(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])
        claims = {"sub": USER["sub"]}
        for name in scope.split():
            for claim in SCOPE_CLAIMS.get(name, []):
                claims[claim] = USER[claim]
        surgery = session.options.get("userinfo")
        if surgery:
            surgery(session, claims)
        if session.options.get("signed_userinfo"):
            claims.update(iss=session.issuer, aud=CLIENT_ID)
            return self.reply(200, session.sign(claims, "RS256").encode(), "application/jwt")
        self.json(200, claims)

    def register(self, session):
        """RFC 7591 section 3 (OpenID Connect Dynamic Client Registration 1.0 section 3): a JSON
        object with https (or loopback) redirect_uris; a new client_id, and a secret unless `none`."""
        try:
            metadata = json.loads(self.body) if self.command == "POST" else None
        except ValueError:
            metadata = None
        session.record("register", content_type=self.headers.get("Content-Type", ""))
        uris = metadata.get("redirect_uris") if isinstance(metadata, dict) else None
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u.startswith("https://") for u in uris):
            return self.json(400, {"error": "invalid_redirect_uri"})
        if "code" not in metadata.get("response_types", ["code"]) or "authorization_code" not in metadata.get("grant_types", ["authorization_code"]):
            return self.json(400, {"error": "invalid_client_metadata"})
        method = metadata.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in ("none", "client_secret_basic", "client_secret_post"):
            return self.json(400, {"error": "invalid_client_metadata"})
        client_id = "dyn-" + secrets.token_hex(8)
        secret = None if method == "none" else secrets.token_urlsafe(32)
        with session.lock:
            session.clients[client_id] = (secret, uris, method)
        answer = dict(metadata, client_id=client_id, client_id_issued_at=int(time.time()), token_endpoint_auth_method=method)
        if secret:
            answer.update(client_secret=secret, client_secret_expires_at=0)
        self.json(201, answer)

    # Distributed claims: the claims endpoint (OpenID Connect Core 5.6.2).
    def claims_endpoint(self, session):
        """As the suite's claims endpoint: the source's access token as a bearer token, in the
        header or the form body but not both, never in the query (the suite fails the module
        then); the answer a JWT of the claims alone (no iss, no aud), signed as the client's ID
        tokens are (OIDCCSignClaimsEndpointResponse: RS256 here). The log says where the token
        came and whether it was the source's, never the token itself."""
        places, token = self.bearer_token("any")
        with session.lock:
            expected = session.claims_access_token
        valid = token is not None and expected is not None and secrets.compare_digest(token, expected)
        session.record("claims_endpoint", method=self.command, token_in=places, token_valid=valid)
        if "query" in places or not valid:
            return self.json(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer error="invalid_token"')])
        self.reply(200, session.sign({"credit_score": 650}, "RS256").encode(), "application/jwt")

    def end_session(self, session):
        """RP-Initiated Logout 1.0 section 2: the hint must be an ID token this provider issued to this client."""
        params = self.query
        hint = params.get("id_token_hint")
        session.record("end_session", hint_issued_here=hint in session.issued_id_tokens, client_id=params.get("client_id"))
        if hint not in session.issued_id_tokens or params.get("client_id", CLIENT_ID) != CLIENT_ID:
            return self.json(400, {"error": "invalid_request", "error_description": "id_token_hint is not an ID token issued here"})
        if session.options.get("backchannel") is not None:
            # AbstractOIDCCClientBackChannelLogoutTest: sent before the end-session response.
            session.send_backchannel_logout()
        target = params.get("post_logout_redirect_uri")
        if target is None:
            return self.reply(200, b"logged out", "text/plain")
        if target != POST_LOGOUT_REDIRECT_URI:
            return self.json(400, {"error": "invalid_request", "error_description": "post_logout_redirect_uri is not registered"})
        query = urllib.parse.urlencode({"state": params["state"]}) if "state" in params else ""
        self.reply(302, b"", "text/plain", [("Location", target + ("?" + query if query else ""))])


def make_certificates(folder):
    """A CA, a server certificate for 127.0.0.1 and a client certificate for CLIENT_ID, all P-256, valid two days."""
    now = datetime.datetime.now(datetime.timezone.utc)

    def issue(subject, key, issuer, issuer_key, extensions):
        builder = x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
        builder = builder.serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        builder = builder.not_valid_after(now + datetime.timedelta(days=2))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(issuer_key, hashes.SHA256())

    def name(common_name):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])

    def write(file, data, mode=0o644):
        path = os.path.join(folder, file)
        with open(path, "wb") as out:
            out.write(data)
        os.chmod(path, mode)

    def key_pem(key):
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = issue(name("oidf-conformance-ca"), ca_key, name("oidf-conformance-ca"), ca_key, [(x509.BasicConstraints(ca=True, path_length=None), True)])
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = issue(name("127.0.0.1"), server_key, ca.subject, ca_key, [
        (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), False),
    ])
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = issue(name(CLIENT_ID), client_key, ca.subject, ca_key, [(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)])
    write("ca.pem", ca.public_bytes(serialization.Encoding.PEM))
    write("server.pem", server.public_bytes(serialization.Encoding.PEM))
    write("server.key", key_pem(server_key), 0o600)
    write("client.pem", client.public_bytes(serialization.Encoding.PEM))
    write("client.key", key_pem(client_key), 0o600)


def make_client_request_object_key(folder):
    """The static client's RSA key for request objects: the public JWK registered here, the
    private key (PKCS#8 PEM) in <folder>/client-request-object.key for the client to sign with."""
    global CLIENT_REQUEST_OBJECT_JWK
    key = jwk.JWK.generate(kty="RSA", size=2048, kid=CLIENT_REQUEST_OBJECT_KID, use="sig")
    path = os.path.join(folder, "client-request-object.key")
    with open(path, "wb") as out:
        out.write(key.export_to_pem(private_key=True, password=None))
    os.chmod(path, 0o600)
    CLIENT_REQUEST_OBJECT_JWK = key.export_public(as_dict=True)


def main():
    global MTLS_PORT
    folder = tempfile.mkdtemp(prefix="oidf-op-")
    make_certificates(folder)
    make_client_request_object_key(folder)
    RSA_POOL.extend(jwk.JWK.generate(kty="RSA", size=2048).export_private(as_dict=True) for _ in range(6))
    # Every module's client connects at once; the default backlog of 5 drops
    # connections while a handler holds the interpreter.
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    mtls = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    mtls.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(folder, "server.pem"), os.path.join(folder, "server.key"))
    context.load_verify_locations(os.path.join(folder, "ca.pem"))
    # Asked for, not required (nginx's optional_no_ca): the token endpoint
    # refuses a client without one, userinfo takes the bearer token alone.
    context.verify_mode = ssl.CERT_OPTIONAL
    # Each handshake in its connection's own thread, on its first read: not
    # inside accept(), where they ran one after another on the accepting thread.
    mtls.socket = context.wrap_socket(mtls.socket, server_side=True, do_handshake_on_connect=False)
    MTLS_PORT = mtls.server_address[1]
    for each in (server, mtls):
        threading.Thread(target=each.serve_forever, daemon=True).start()
    print("READY %d %d %s" % (server.server_address[1], MTLS_PORT, folder), flush=True)
    sys.stdin.read()
    server.shutdown()
    mtls.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
