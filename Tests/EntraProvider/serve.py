#!/usr/bin/env python3
"""A test provider that behaves as Microsoft Entra ID (any tenant) and Google
sign-in are documented to, token for token, for the issuer-rule tests
(issue 39). Neither can be reached from the test machine; this serves what
their documentation says they serve, on 127.0.0.1.

    serve.py --run-dir DIR

Needs `cryptography` (the local provider's venv has it: scripts/entra-provider.sh
runs this with .build/provider/venv/bin/python). Binds a free port, writes
DIR/env.json, then serves until killed.

Microsoft, as "OpenID Connect on the Microsoft identity platform", "Microsoft
identity platform ID tokens" and "Validate tokens — multi-tenant
applications" describe it, with BASE = http://127.0.0.1:PORT standing for
https://login.microsoftonline.com:
- GET BASE/{common|organizations|consumers}/v2.0/.well-known/openid-configuration:
  issuer is the template BASE/{tenantid}/v2.0 (literally `{tenantid}`), jwks_uri
  the shared BASE/common/discovery/v2.0/keys; BASE/<tenant GUID>/v2.0/... names
  the tenant's own issuer. No `authorization_response_iss_parameter_supported`:
  Microsoft sends no `iss` in the redirect.
- GET BASE/<tenant>/oauth2/v2.0/authorize: no login page; `login_hint` picks the
  user (below) and the answer is a 302 to the redirect URI with `code` and
  `state` only. `organizations` refuses personal accounts and `consumers` work
  accounts (AADSTS50020-like `access_denied` redirects), as Microsoft does.
- POST BASE/<tenant>/oauth2/v2.0/token: authorization_code (PKCE S256 checked,
  client_secret_post or basic) and refresh_token. ID tokens are RS256, `ver`
  2.0, `iss` BASE/<tid>/v2.0, `tid` the user's tenant GUID, `oid`, `sub`,
  `preferred_username`, `name`, `nonce` at sign-in; a refresh rotates the
  refresh token and issues a new ID token (no nonce).
- BASE/common/oauth2/v2.0/logout: the end-session endpoint.

Users (login_hint):
- alice@contoso.example: tenant contoso (72f988bf-86f1-41af-91ab-2d7cd011db47)
- bob@fabrikam.example: tenant fabrikam (3c6a1b8e-0d2f-4a6e-9b1c-5f7e8d9a0b1c)
- carol@outlook.example: a personal account, tid 9188040d-6c67-4c5b-b112-36a304b66dad
- mallory@contoso.example: tenant contoso, but her ID tokens' `iss` names
  fabrikam's issuer (a wrong tid/iss combination)

Google, as the "OpenID Connect" and "Authenticate with a backend server" pages
of Google Identity describe it, with GBASE = BASE/google standing for
https://accounts.google.com and GBASE without `http://` for accounts.google.com:
- GET GBASE/.well-known/openid-configuration (issuer GBASE), GBASE/auth,
  GBASE/token, GBASE/certs, GBASE/revoke; `iss` in the redirect (Google sends it).
- Users: ann@example.com (Workspace: `hd` example.com, `iss` GBASE),
  ben@gmail.example (consumer: no `hd`, `iss` the scheme-less spelling),
  zed@example.com (`iss` GBASE/ with a trailing slash: neither documented spelling).

Test controls: POST BASE/test/next-refresh-user?refresh_token_user=LOGIN makes
the next refresh of any grant issue an ID token for LOGIN instead (a provider
that answers a refresh with another user's ID token).
"""
import argparse
import base64
import hashlib
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CONTOSO = "72f988bf-86f1-41af-91ab-2d7cd011db47"
FABRIKAM = "3c6a1b8e-0d2f-4a6e-9b1c-5f7e8d9a0b1c"
CONSUMERS = "9188040d-6c67-4c5b-b112-36a304b66dad"
MULTI_TENANT = ("common", "organizations", "consumers")

CLIENT_ID = "6731de76-14a6-49ae-97bc-6eba6914391e"
CLIENT_SECRET = secrets.token_urlsafe(24)

MICROSOFT_USERS = {
    "alice@contoso.example": {"tid": CONTOSO, "oid": "00000000-0000-0000-0000-00000000a11c", "name": "Alice"},
    "bob@fabrikam.example": {"tid": FABRIKAM, "oid": "00000000-0000-0000-0000-000000000b0b", "name": "Bob"},
    "carol@outlook.example": {"tid": CONSUMERS, "oid": "00000000-0000-0000-0000-0000000ca401", "name": "Carol"},
    "mallory@contoso.example": {"tid": CONTOSO, "oid": "00000000-0000-0000-0000-00000000ba11", "name": "Mallory",
                                "iss_tid": FABRIKAM},
}
GOOGLE_USERS = {
    "ann@example.com": {"sub": "110169484474386276334", "hd": "example.com", "spelling": "url"},
    "ben@gmail.example": {"sub": "110248495921238986420", "spelling": "bare"},
    "zed@example.com": {"sub": "110000000000000000001", "hd": "example.com", "spelling": "slash"},
}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def int_b64(value):
    return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class Keys:
    """Two RSA keys in one published set, the way Microsoft's shared key set holds several."""

    def __init__(self):
        self.keys = {}
        for kid in ("nOo3ZDrODXEK1jKWhXslHR_KXEg", "l3sQ-50cCH4xBVZLHTGwnSR7680"):
            self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.signing_kid = "nOo3ZDrODXEK1jKWhXslHR_KXEg"

    def jwks(self, issuer=None):
        keys = []
        for kid, key in self.keys.items():
            numbers = key.public_key().public_numbers()
            jwk = {"kty": "RSA", "use": "sig", "kid": kid, "x5t": kid, "n": int_b64(numbers.n), "e": int_b64(numbers.e)}
            if issuer:
                jwk["issuer"] = issuer
            keys.append(jwk)
        return {"keys": keys}

    def sign(self, claims):
        header = {"typ": "JWT", "alg": "RS256", "kid": self.signing_kid}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        signature = self.keys[self.signing_kid].sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature)


class State:
    def __init__(self, base):
        self.base = base
        self.keys = Keys()
        self.lock = threading.Lock()
        self.codes = {}
        self.refresh_tokens = {}
        self.access_tokens = {}
        self.next_refresh_user = None
        self.requests = []


def at_hash(access_token):
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return b64url(digest[: len(digest) // 2])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "entra-google-test-provider"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        sys.stderr.write("%s\n" % (format % args))

    @property
    def state(self):
        return self.server.state

    # --- replies

    def reply(self, status, body=b"", content_type="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, code, description):
        self.reply(status, {"error": code, "error_description": description})

    def redirect(self, location):
        self.reply(302, b"", "text/plain", [("Location", location)])

    def form(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8")
        return dict(urllib.parse.parse_qsl(body, keep_blank_values=True))

    # --- routing

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        parts = [p for p in url.path.split("/") if p]
        base = self.state.base
        if parts[:1] == ["google"]:
            return self.google_get(parts[1:], query)
        if parts == ["common", "discovery", "v2.0", "keys"]:
            return self.reply(200, self.state.keys.jwks())
        if len(parts) == 4 and parts[1:] == ["v2.0", ".well-known", "openid-configuration"]:
            tenant = parts[0]
            issuer = f"{base}/{{tenantid}}/v2.0" if tenant in MULTI_TENANT else f"{base}/{tenant}/v2.0"
            if tenant not in MULTI_TENANT and tenant not in (CONTOSO, FABRIKAM, CONSUMERS):
                return self.error(400, "invalid_tenant", "AADSTS90002: Tenant not found.")
            return self.reply(200, {
                "issuer": issuer,
                "authorization_endpoint": f"{base}/{tenant}/oauth2/v2.0/authorize",
                "token_endpoint": f"{base}/{tenant}/oauth2/v2.0/token",
                "device_authorization_endpoint": f"{base}/{tenant}/oauth2/v2.0/devicecode",
                "end_session_endpoint": f"{base}/{tenant}/oauth2/v2.0/logout",
                "jwks_uri": f"{base}/common/discovery/v2.0/keys",
                "userinfo_endpoint": f"{base}/oidc/userinfo",
                "response_modes_supported": ["query", "fragment", "form_post"],
                "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
                "scopes_supported": ["openid", "profile", "email", "offline_access"],
                "subject_types_supported": ["pairwise"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
                "claims_supported": ["sub", "iss", "aud", "exp", "iat", "auth_time", "acr", "nonce", "preferred_username",
                                     "name", "tid", "ver", "at_hash", "c_hash", "email"],
                "request_uri_parameter_supported": False,
                "tenant_region_scope": None,
                "cloud_instance_name": "microsoftonline.com",
                "msgraph_host": "graph.microsoft.com",
                "rbac_url": "https://pas.windows.net",
            })
        if len(parts) == 4 and parts[1:] == ["oauth2", "v2.0", "authorize"]:
            return self.microsoft_authorize(parts[0], query)
        if len(parts) == 4 and parts[1:] == ["oauth2", "v2.0", "logout"]:
            return self.reply(200, b"signed out", "text/plain")
        return self.error(404, "not_found", "no such endpoint")

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        parts = [p for p in url.path.split("/") if p]
        if parts[:1] == ["google"]:
            return self.google_post(parts[1:])
        if parts == ["test", "next-refresh-user"]:
            form = self.form()
            with self.state.lock:
                self.state.next_refresh_user = form.get("login") or None
            return self.reply(204)
        if len(parts) == 4 and parts[1:] == ["oauth2", "v2.0", "token"]:
            return self.token(parts[0], self.form(), microsoft=True)
        return self.error(404, "not_found", "no such endpoint")

    # --- Microsoft

    def microsoft_authorize(self, tenant, query):
        redirect_uri = query.get("redirect_uri", "")
        if query.get("client_id") != CLIENT_ID or not redirect_uri.startswith("http://127.0.0.1"):
            return self.error(400, "invalid_request", "AADSTS700016: Application not found in the directory.")
        login = query.get("login_hint", "")
        user = MICROSOFT_USERS.get(login)
        state = query.get("state", "")

        def deny(code, description):
            self.redirect(redirect_uri + "?" + urllib.parse.urlencode(
                {"error": code, "error_description": description, "state": state}))

        if user is None:
            return deny("access_denied", "AADSTS50034: The user account does not exist.")
        personal = user["tid"] == CONSUMERS
        if tenant == "organizations" and personal:
            return deny("access_denied", "AADSTS50020: personal Microsoft accounts cannot sign in to organizations.")
        if tenant == "consumers" and not personal:
            return deny("access_denied", "AADSTS50020: work or school accounts cannot sign in to consumers.")
        if tenant not in MULTI_TENANT and tenant != user["tid"]:
            return deny("access_denied", "AADSTS50020: the user's account is not in this tenant.")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return deny("invalid_request", "AADSTS501491: code_challenge is required.")
        code = secrets.token_urlsafe(32)
        with self.state.lock:
            self.state.codes[code] = {
                "login": login, "tenant": tenant, "redirect_uri": redirect_uri, "nonce": query.get("nonce"),
                "challenge": query["code_challenge"], "scope": query.get("scope", ""), "provider": "microsoft",
            }
        # Microsoft's redirect carries code and state only (no iss, no session_state needed here).
        self.redirect(redirect_uri + "?" + urllib.parse.urlencode({"code": code, "state": state}))

    def microsoft_id_token(self, login, nonce, access_token):
        user = MICROSOFT_USERS[login]
        now = int(time.time())
        claims = {
            "ver": "2.0",
            "iss": f"{self.state.base}/{user.get('iss_tid', user['tid'])}/v2.0",
            "sub": "AAAAAAAAAAAAAAAAAAAAA" + user["oid"][-12:],
            "aud": CLIENT_ID,
            "exp": now + 3600,
            "iat": now,
            "nbf": now,
            "name": user["name"],
            "preferred_username": login,
            "oid": user["oid"],
            "tid": user["tid"],
            "at_hash": at_hash(access_token),
            "aio": secrets.token_urlsafe(12),
        }
        if nonce:
            claims["nonce"] = nonce
        return self.state.keys.sign(claims)

    # --- Google

    def google_base(self):
        return f"{self.state.base}/google"

    def google_get(self, parts, query):
        gbase = self.google_base()
        if parts == [".well-known", "openid-configuration"]:
            return self.reply(200, {
                "issuer": gbase,
                "authorization_endpoint": f"{gbase}/auth",
                "token_endpoint": f"{gbase}/token",
                "userinfo_endpoint": f"{gbase}/userinfo",
                "revocation_endpoint": f"{gbase}/revoke",
                "jwks_uri": f"{gbase}/certs",
                "response_types_supported": ["code", "token", "id_token", "code token", "code id_token", "none"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "scopes_supported": ["openid", "email", "profile"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
                "claims_supported": ["aud", "email", "email_verified", "exp", "family_name", "given_name", "iat", "iss",
                                     "name", "picture", "sub"],
                "code_challenge_methods_supported": ["plain", "S256"],
                "grant_types_supported": ["authorization_code", "refresh_token",
                                          "urn:ietf:params:oauth:grant-type:device_code",
                                          "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                "authorization_response_iss_parameter_supported": True,
            })
        if parts == ["certs"]:
            return self.reply(200, self.state.keys.jwks())
        if parts == ["auth"]:
            redirect_uri = query.get("redirect_uri", "")
            if query.get("client_id") != CLIENT_ID or not redirect_uri.startswith("http://127.0.0.1"):
                return self.error(400, "invalid_request", "Error 401: invalid_client")
            login = query.get("login_hint", "")
            state = query.get("state", "")
            if login not in GOOGLE_USERS:
                return self.redirect(redirect_uri + "?" + urllib.parse.urlencode(
                    {"error": "access_denied", "state": state, "iss": gbase}))
            code = "4/" + secrets.token_urlsafe(32)
            with self.state.lock:
                self.state.codes[code] = {
                    "login": login, "tenant": None, "redirect_uri": redirect_uri, "nonce": query.get("nonce"),
                    "challenge": query.get("code_challenge"), "scope": query.get("scope", ""), "provider": "google",
                }
            return self.redirect(redirect_uri + "?" + urllib.parse.urlencode(
                {"state": state, "iss": gbase, "code": code, "scope": query.get("scope", "")}))
        return self.error(404, "not_found", "no such endpoint")

    def google_post(self, parts):
        if parts == ["token"]:
            return self.token(None, self.form(), microsoft=False)
        if parts == ["revoke"]:
            form = self.form()
            with self.state.lock:
                self.state.refresh_tokens.pop(form.get("token", ""), None)
                self.state.access_tokens.pop(form.get("token", ""), None)
            return self.reply(200, {})
        return self.error(404, "not_found", "no such endpoint")

    def google_id_token(self, login, nonce, access_token):
        user = GOOGLE_USERS[login]
        gbase = self.google_base()
        issuer = {"url": gbase, "bare": gbase.split("://", 1)[1], "slash": gbase + "/"}[user["spelling"]]
        now = int(time.time())
        claims = {
            "iss": issuer, "azp": CLIENT_ID, "aud": CLIENT_ID, "sub": user["sub"], "email": login,
            # Google sends email_verified as a boolean in ID tokens.
            "email_verified": True, "at_hash": at_hash(access_token), "iat": now, "exp": now + 3600,
        }
        if "hd" in user:
            claims["hd"] = user["hd"]
        if nonce:
            claims["nonce"] = nonce
        return self.state.keys.sign(claims)

    # --- the token endpoint, both providers

    def client_authenticated(self, form):
        authorization = self.headers.get("Authorization", "")
        if authorization.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
            except Exception:
                return False
            client_id, _, secret = decoded.partition(":")
            client_id, secret = urllib.parse.unquote_plus(client_id), urllib.parse.unquote_plus(secret)
        else:
            client_id, secret = form.get("client_id"), form.get("client_secret")
        return client_id == CLIENT_ID and secret == CLIENT_SECRET

    def token(self, tenant, form, microsoft):
        if not self.client_authenticated(form):
            return self.error(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
        grant_type = form.get("grant_type")
        with self.state.lock:
            if grant_type == "authorization_code":
                grant = self.state.codes.pop(form.get("code", ""), None)
                if grant is None or grant["redirect_uri"] != form.get("redirect_uri") \
                        or grant["provider"] != ("microsoft" if microsoft else "google") \
                        or (microsoft and grant["tenant"] != tenant):
                    return self.error(400, "invalid_grant", "AADSTS70008: The provided authorization code is invalid.")
                verifier = form.get("code_verifier", "")
                if b64url(hashlib.sha256(verifier.encode("ascii")).digest()) != grant["challenge"]:
                    return self.error(400, "invalid_grant", "AADSTS501481: The Code_Verifier does not match.")
                login, nonce = grant["login"], grant["nonce"]
                scope = grant["scope"]
            elif grant_type == "refresh_token":
                grant = self.state.refresh_tokens.pop(form.get("refresh_token", ""), None)
                if grant is None or (microsoft and grant["tenant"] != tenant):
                    return self.error(400, "invalid_grant", "AADSTS70000: The provided refresh token is invalid.")
                login, nonce, scope = grant["login"], None, grant["scope"]
                if self.state.next_refresh_user:
                    login, self.state.next_refresh_user = self.state.next_refresh_user, None
            else:
                return self.error(400, "unsupported_grant_type", "AADSTS70003: unsupported grant type")
            access_token = secrets.token_urlsafe(32)
            refresh_token = secrets.token_urlsafe(32)
            self.state.refresh_tokens[refresh_token] = {
                "login": grant["login"], "tenant": grant["tenant"], "scope": scope, "provider": grant["provider"]}
            self.state.access_tokens[access_token] = grant["login"]
        id_token = (self.microsoft_id_token if microsoft else self.google_id_token)(login, nonce, access_token)
        return self.reply(200, {
            "token_type": "Bearer", "scope": scope, "expires_in": 3599, "ext_expires_in": 3599,
            "access_token": access_token, "refresh_token": refresh_token, "id_token": id_token,
        })


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-dir", required=True)
    args = parser.parse_args()
    # Tests connect all at once; the default backlog of 5 drops connections (see op.py).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    server.state = State(base)
    env = {
        "base": base,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "tenants": {"contoso": CONTOSO, "fabrikam": FABRIKAM, "consumers": CONSUMERS},
        "google_issuer": f"{base}/google",
        "google_issuer_bare": f"{base}/google".split("://", 1)[1],
        "test_next_refresh_user": f"{base}/test/next-refresh-user",
    }
    path = os.path.join(args.run_dir, "env.json")
    descriptor = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(env, file, indent=2)
    os.replace(path + ".tmp", path)
    print(base, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
