"""A provider that behaves as Sign in with Apple does, for the tests.

Apple cannot be reached from the test machines; this server follows Apple's
public documentation, token for token, so that the library, the CLI and the
example are tested against that behaviour:

- "Sign in with Apple REST API" and "Request an authorization to the Sign in
  with Apple server": /auth/authorize with response_type `code` (or `code
  id_token`), response_mode `form_post` (required when the scope has `name` or
  `email`), state, nonce. The browser POSTs `code`, `state`, `id_token` (for
  `code id_token`) and, on a user's FIRST authorization of the client only,
  `user` = {"name":{"firstName","lastName"},"email"} to the redirect URI; a
  refusal posts `error=user_cancelled_authorize`. No `iss` in the response.
- "Generate and validate tokens": /auth/token, client_secret_post only, the
  client secret a JWT checked as Apple checks it (ES256, `kid` the key id, `iss`
  the team id, `sub` the client id, `aud` https://appleid.apple.com -- here the
  issuer of this server --, `exp` after now and at most 15777000 s after `iat`):
  any failure is `invalid_client`; a bad code or refresh token `invalid_grant`.
  The answer: access_token, token_type Bearer, expires_in 3600, refresh_token
  (authorization code only), id_token.
- "Fetch Apple's public key for verifying token signature": /auth/keys, RS256.
- "Authenticating users with Sign in with Apple": the ID token's claims, with
  `email_verified` and `is_private_email` as the strings "true"/"false"
  (--boolean-claims: as JSON booleans, as Apple sends them in newer tokens),
  `nonce_supported`, `real_user_status`, `auth_time`, `at_hash`.
- "Revoke tokens": /auth/revoke, client_id, client_secret, token,
  token_type_hint -> 200 with an empty body; a revoked refresh token then gets
  `invalid_grant`.

Where it differs from Apple, for the tests' sake: the redirect URI may also be
any http URL on 127.0.0.1 (Apple wants registered https ones); the sign-in
page signs the one test user in without asking (`test_action=cancel` in the
authorize URL makes it post the refusal instead); PKCE parameters are
ignored, as Apple's documentation does not name them.
"""

import argparse
import base64
import hashlib
import html
import json
import os
import secrets
import string
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa, utils
from cryptography.exceptions import InvalidSignature

SIX_MONTHS = 15777000
CODE_LIFETIME = 300


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def ten_characters() -> str:
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(10))


class Apple:
    def __init__(self, run_dir, boolean_claims, access_token_lifetime):
        self.lock = threading.Lock()
        self.boolean_claims = boolean_claims
        self.access_token_lifetime = access_token_lifetime
        self.team_id = ten_characters()
        self.key_id = ten_characters()
        self.client_id = "com.example.signin.service"
        self.redirect_uri = "https://app.example.com/apple/callback"
        self.users = {}            # test_user -> the user's sub, email and name
        # The app's key, as Apple's developer site lets a team download it once (.p8).
        self.app_key = ec.generate_private_key(ec.SECP256R1())
        self.key_file = os.path.join(run_dir, "AuthKey_%s.p8" % self.key_id)
        pem = self.app_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        self.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.signing_kid = "apple-test-" + secrets.token_hex(4)
        self.codes = {}            # code -> dict(redirect_uri, nonce, expires, client_id)
        self.refresh_tokens = {}   # refresh token -> dict(revoked, nonce)
        self.access_tokens = {}    # access token -> refresh token
        self.authorized = set()    # (client_id, sub) that saw the user once
        self.secrets_seen = []     # client secrets presented, in order

    def user_named(self, name):
        with self.lock:
            if name not in self.users:
                self.users[name] = {
                    "sub": "001234.%s.0123" % secrets.token_hex(16),
                    "email": "%s@privaterelay.appleid.com" % secrets.token_hex(5),
                    "firstName": "Jane",
                    "lastName": "Appleseed",
                }
            return self.users[name]

    # --- keys and tokens

    def jwks(self):
        numbers = self.signing_key.public_key().public_numbers()
        return {"keys": [{
            "kty": "RSA", "kid": self.signing_kid, "use": "sig", "alg": "RS256",
            "n": b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
            "e": b64url(numbers.e.to_bytes(3, "big")),
        }]}

    def sign_rs256(self, claims):
        header = {"kid": self.signing_kid, "alg": "RS256"}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        from cryptography.hazmat.primitives.asymmetric import padding
        signature = self.signing_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature)

    def boolean(self, value):
        return value if self.boolean_claims else ("true" if value else "false")

    def id_token(self, issuer, user, nonce, access_token):
        now = int(time.time())
        claims = {
            "iss": issuer, "aud": self.client_id, "exp": now + 600, "iat": now, "sub": user["sub"],
            "email": user["email"], "email_verified": self.boolean(True),
            "is_private_email": self.boolean(True), "auth_time": now, "nonce_supported": True,
            "real_user_status": 2,
        }
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode()).digest()
            claims["at_hash"] = b64url(digest[:16])
        return self.sign_rs256(claims)

    # --- the client secret, as "Generate and validate tokens" says Apple checks it

    def client_secret_problem(self, client_id, secret, issuer):
        """None when the secret is good; else why not (for the log only)."""
        if client_id != self.client_id:
            return "unknown client_id"
        if not secret:
            return "no client_secret"
        parts = secret.split(".")
        if len(parts) != 3:
            return "not a JWS"
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            raw = b64url_decode(parts[2])
        except (ValueError, UnicodeDecodeError):
            return "not JSON"
        if header.get("alg") != "ES256":
            return "alg is not ES256"
        if header.get("kid") != self.key_id:
            return "wrong kid"
        if len(raw) != 64:
            return "not a P-256 signature"
        signature = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        try:
            self.app_key.public_key().verify(signature, (parts[0] + "." + parts[1]).encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return "bad signature"
        now = int(time.time())
        if claims.get("iss") != self.team_id:
            return "wrong iss"
        if claims.get("sub") != self.client_id:
            return "wrong sub"
        if claims.get("aud") != issuer:
            return "wrong aud"
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int):
            return "iat or exp missing"
        if iat > now + 60:
            return "iat in the future"
        if exp <= now:
            return "expired"
        if exp - iat > SIX_MONTHS:
            return "longer than six months"
        return None


class Handler(BaseHTTPRequestHandler):
    server_version = "AppleTestProvider/1"
    apple: Apple = None
    issuer: str = None

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def send_html(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html;charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def form(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        return dict(urllib.parse.parse_qsl(body, keep_blank_values=True))

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        apple = self.apple
        if url.path == "/.well-known/openid-configuration":
            return self.send_json(200, {
                "issuer": self.issuer,
                "authorization_endpoint": self.issuer + "/auth/authorize",
                "token_endpoint": self.issuer + "/auth/token",
                "revocation_endpoint": self.issuer + "/auth/revoke",
                "jwks_uri": self.issuer + "/auth/keys",
                "response_types_supported": ["code"],
                "response_modes_supported": ["query", "fragment", "form_post"],
                "subject_types_supported": ["pairwise"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "scopes_supported": ["openid", "email", "name"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
                "claims_supported": ["aud", "email", "email_verified", "exp", "iat", "is_private_email", "iss",
                                     "nonce", "nonce_supported", "real_user_status", "sub", "transfer_sub"],
            })
        if url.path == "/auth/keys":
            return self.send_json(200, apple.jwks())
        if url.path == "/auth/authorize":
            return self.authorize(query)
        if url.path == "/test/secrets":
            with apple.lock:
                return self.send_json(200, {"count": len(apple.secrets_seen), "distinct": len(set(apple.secrets_seen))})
        self.send_json(404, {"error": "not_found"})

    def authorize(self, query):
        apple = self.apple
        redirect_uri = query.get("redirect_uri", "")
        if query.get("client_id") != apple.client_id:
            return self.send_html(400, "<p>invalid_client</p>")
        parsed = urllib.parse.urlsplit(redirect_uri)
        loopback = parsed.scheme == "http" and parsed.hostname == "127.0.0.1"
        if redirect_uri != apple.redirect_uri and not loopback:
            return self.send_html(400, "<p>invalid_request: Invalid web redirect url.</p>")
        response_type = query.get("response_type", "")
        if response_type not in ("code", "code id_token"):
            return self.send_html(400, "<p>unsupported_response_type</p>")
        scopes = query.get("scope", "").split()
        mode = query.get("response_mode", "query")
        if ("name" in scopes or "email" in scopes) and mode != "form_post":
            return self.send_html(400, "<p>invalid_request: response_mode must be form_post when name or email scope is requested.</p>")
        if mode not in ("query", "form_post"):
            return self.send_html(400, "<p>invalid_request: unsupported response_mode</p>")
        state = query.get("state")
        fields = []
        if query.get("test_action") == "cancel":
            fields.append(("error", "user_cancelled_authorize"))
        else:
            code = "c" + secrets.token_hex(16) + ".0.abcd." + secrets.token_urlsafe(16)
            nonce = query.get("nonce")
            user = apple.user_named(query.get("test_user", "default"))
            with apple.lock:
                apple.codes[code] = {
                    "redirect_uri": redirect_uri, "nonce": nonce, "expires": time.time() + CODE_LIFETIME, "user": user}
                first = (apple.client_id, user["sub"]) not in apple.authorized
                apple.authorized.add((apple.client_id, user["sub"]))
            fields.append(("code", code))
            if response_type == "code id_token":
                fields.append(("id_token", apple.id_token(self.issuer, user, nonce, None)))
            if first and mode == "form_post" and ("name" in scopes or "email" in scopes):
                shared = {}
                if "name" in scopes:
                    shared["name"] = {"firstName": user["firstName"], "lastName": user["lastName"]}
                if "email" in scopes:
                    shared["email"] = user["email"]
                fields.append(("user", json.dumps(shared)))
        if state is not None:
            fields.append(("state", state))
        if mode == "query":
            separator = "&" if parsed.query else "?"
            self.send_response(302)
            self.send_header("Location", redirect_uri + separator + urllib.parse.urlencode(fields))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        inputs = "\n".join(
            '<input type="hidden" name="%s" value="%s">' % (html.escape(n, quote=True), html.escape(v, quote=True))
            for n, v in fields)
        self.send_html(200, """<!DOCTYPE html>
<html><head><title>Sign in with Apple</title></head>
<body onload="document.forms[0].submit()">
<form method="post" action="%s">
%s
<noscript><button type="submit">Continue</button></noscript>
</form></body></html>""" % (html.escape(redirect_uri, quote=True), inputs))

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/auth/token":
            return self.token(self.form())
        if url.path == "/auth/revoke":
            return self.revoke(self.form())
        self.send_json(404, {"error": "not_found"})

    def authenticated(self, form):
        apple = self.apple
        if self.headers.get("Authorization"):
            # Apple takes client_secret_post only.
            self.log_message("refused: an Authorization header")
            self.send_json(400, {"error": "invalid_client"})
            return False
        secret = form.get("client_secret")
        problem = apple.client_secret_problem(form.get("client_id"), secret, self.issuer)
        with apple.lock:
            apple.secrets_seen.append(secret or "")
        if problem:
            self.log_message("invalid_client: %s", problem)
            self.send_json(400, {"error": "invalid_client"})
            return False
        return True

    def token(self, form):
        apple = self.apple
        if not self.authenticated(form):
            return
        grant_type = form.get("grant_type")
        access_token = "a" + secrets.token_hex(16) + ".0.abcd." + secrets.token_urlsafe(20)
        with apple.lock:
            if grant_type == "authorization_code":
                entry = apple.codes.pop(form.get("code", ""), None)
                if entry is None or entry["expires"] < time.time() or entry["redirect_uri"] != form.get("redirect_uri"):
                    return self.send_json(400, {"error": "invalid_grant"})
                refresh_token = "r" + secrets.token_hex(16) + ".0.abcd." + secrets.token_urlsafe(20)
                apple.refresh_tokens[refresh_token] = {"revoked": False, "user": entry["user"]}
                apple.access_tokens[access_token] = refresh_token
                nonce, user = entry["nonce"], entry["user"]
            elif grant_type == "refresh_token":
                refresh_token = form.get("refresh_token", "")
                entry = apple.refresh_tokens.get(refresh_token)
                if entry is None or entry["revoked"]:
                    return self.send_json(400, {"error": "invalid_grant"})
                apple.access_tokens[access_token] = refresh_token
                nonce, user = None, entry["user"]
            else:
                return self.send_json(400, {"error": "unsupported_grant_type"})
        body = {
            "access_token": access_token, "token_type": "Bearer", "expires_in": apple.access_token_lifetime,
            "id_token": apple.id_token(self.issuer, user, nonce, access_token),
        }
        if grant_type == "authorization_code":
            body["refresh_token"] = refresh_token
        self.send_json(200, body)

    def revoke(self, form):
        apple = self.apple
        if not self.authenticated(form):
            return
        token = form.get("token", "")
        if form.get("token_type_hint") not in (None, "refresh_token", "access_token"):
            return self.send_json(400, {"error": "unsupported_token_type"})
        with apple.lock:
            if token in apple.refresh_tokens:
                apple.refresh_tokens[token]["revoked"] = True
            elif token in apple.access_tokens:
                apple.access_tokens.pop(token)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--name", default="apple")
    parser.add_argument("--boolean-claims", action="store_true")
    parser.add_argument("--access-token-lifetime", type=int, default=3600)
    args = parser.parse_args()
    apple = Apple(args.run_dir, args.boolean_claims, args.access_token_lifetime)
    # Tests connect all at once; the default backlog of 5 drops connections (see op.py).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer = "http://127.0.0.1:%d" % server.server_address[1]
    Handler.apple = apple
    Handler.issuer = issuer
    env = {
        "name": args.name,
        "issuer": issuer,
        "endpoints": {
            "metadata": issuer + "/.well-known/openid-configuration",
            "authorize": issuer + "/auth/authorize",
            "token": issuer + "/auth/token",
            "revoke": issuer + "/auth/revoke",
            "jwks": issuer + "/auth/keys",
            "secrets": issuer + "/test/secrets",
        },
        "client_id": apple.client_id,
        "team_id": apple.team_id,
        "key_id": apple.key_id,
        "key_file": apple.key_file,
        "redirect_uri": apple.redirect_uri,
        "boolean_claims": args.boolean_claims,
    }
    tmp = os.path.join(args.run_dir, "env.json.tmp")
    with open(tmp, "w") as f:
        json.dump(env, f, indent=2)
    os.rename(tmp, os.path.join(args.run_dir, "env.json"))
    print("serving", issuer, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
