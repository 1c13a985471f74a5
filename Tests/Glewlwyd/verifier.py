"""An independent RFC 9449 (DPoP) and RFC 8705 (certificate-bound) resource server for the tests.

    verifier.py --port PORT --issuer URL [--issuer URL ...] --jwks URL --downgrade TOKEN_ENDPOINT [--behind-front]

Started by scripts/glewlwyd.sh beside glewlwyd. It accepts the access tokens
glewlwyd issues (JWTs, `typ` at+jwt, checked against glewlwyd's JWKS with
jwcrypto: signature, `iss`, `exp`) and checks the DPoP proof that comes with
them with Auth0's verifier (PyPI `auth0-api-python`, `ApiClient.verify_dpop_proof`:
`typ`, `alg`, public `jwk`, signature, `htm`, `htu` normalised, `iat` window,
`ath`). Auth0's verifier takes ES256 only; for a proof signed with another
algorithm (EdDSA, PS256, RS256) the same checks run here on jwcrypto, and the
log says which verifier did it. What auth0-api-python leaves to the resource
server is done here: `cnf.jkt` against the proof key's RFC 7638 thumbprint,
`jti` replay (a proof is accepted once) and server nonces.

Endpoints (any method):

- `/api/me`: DPoP only (`Authorization: DPoP`, a valid proof bound to `cnf.jkt`).
  A Bearer token gets 401 `WWW-Authenticate: DPoP algs="..."` (with
  `error="invalid_token"` when the token is DPoP-bound).
- `/api/nonce/me`: the same, and the proof must carry the server's current
  nonce: otherwise 401 `WWW-Authenticate: DPoP error="use_dpop_nonce"` and a
  `DPoP-Nonce` header. Every answer of it carries `DPoP-Nonce`. `?rotate=1`
  makes a new nonce first (the old one is refused from then on).
- `/api/nonce/loop`: a resource that asks for a new nonce every time (401
  `use_dpop_nonce` with a fresh `DPoP-Nonce`, whatever the proof): a client
  must retry once and then give up.
- `/api/bearer/me`: a bearer-only resource: a token without `cnf`, as
  `Authorization: Bearer`. DPoP-bound tokens are refused there.
- `/api/redirect?to=TARGET[&status=302]`: redirects to TARGET (a path here or
  any URL); `/api/redirect/chain?n=N` redirects N times before `/api/me`.
- `/api/mtls/me` (reached through the TLS front): the token's `cnf.x5t#S256`
  must be the SHA-256 thumbprint of the client certificate the front verified.
- `/downgrade/token` (POST): a token endpoint that answers Bearer to a DPoP
  request: it passes the request on to glewlwyd's token endpoint without its
  `DPoP` header (glewlwyd 2.7.5 has no setting that makes it ignore a proof:
  with DPoP turned off it still binds client_credentials tokens), so the
  client gets a real bearer token where it asked for a DPoP-bound one.
- `/test/requests`: GET the log of what was presented (method, URL, scheme, the
  proof's `htm`, `htu`, `jti`, whether `ath` was there, `nonce`, the key's
  thumbprint, the answer); DELETE clears it.
- `/test/nonce`: GET the current nonce (for tests that want to see rotation).
"""

import argparse
import asyncio
import base64
import hashlib
import json
import secrets
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urljoin, urlsplit

from auth0_api_python import ApiClient, ApiClientOptions
from auth0_api_python.errors import BaseAuthError
from jwcrypto import jwk, jws, jwt

DPOP_ALGS = ["ES256", "EdDSA", "PS256", "RS256"]
IAT_OFFSET = 300
IAT_LEEWAY = 30


class Rejected(Exception):
    def __init__(self, status, challenge, description, nonce=False):
        super().__init__(description)
        self.status = status
        self.challenge = challenge
        self.description = description
        self.nonce = nonce


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sha256_b64url(text):
    return b64url(hashlib.sha256(text.encode()).digest())


def thumbprint(public_jwk):
    """RFC 7638: the required members, lexicographic order, no whitespace."""
    required = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
    members = required.get(public_jwk.get("kty"))
    if members is None or any(name not in public_jwk for name in members):
        raise Rejected(401, "DPoP", "invalid_dpop_proof: unsupported or incomplete jwk")
    canonical = json.dumps({name: public_jwk[name] for name in members}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


def normalize_htu(url):
    """RFC 9449 §4.3: the URI without query and fragment, scheme and host lowercase, default port dropped."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is not None and not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path or '/'}"


class State:
    def __init__(self, issuers, jwks_url):
        self.issuers = issuers
        self.jwks_url = jwks_url
        self.lock = threading.Lock()
        self.keys = None
        self.keys_loaded = 0.0
        self.seen_jti = {}
        self.nonce = secrets.token_urlsafe(16)
        self.requests = []
        self.auth0 = ApiClient(ApiClientOptions(domain="127.0.0.1", audience="glewlwyd-resource",
                                                dpop_iat_offset=IAT_OFFSET, dpop_iat_leeway=IAT_LEEWAY))

    def jwks(self, refresh=False):
        with self.lock:
            if self.keys is None or refresh or time.time() - self.keys_loaded > 300:
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                with opener.open(self.jwks_url, timeout=10) as response:
                    self.keys = jwk.JWKSet.from_json(response.read())
                self.keys_loaded = time.time()
            return self.keys

    def remember_jti(self, jti, iat):
        """True the first time a jti is seen within the acceptance window."""
        now = time.time()
        with self.lock:
            for old in [key for key, seen in self.seen_jti.items() if seen < now - IAT_OFFSET - IAT_LEEWAY]:
                del self.seen_jti[old]
            if jti in self.seen_jti:
                return False
            self.seen_jti[jti] = max(now, iat)
            return True

    def log(self, entry):
        with self.lock:
            self.requests.append(entry)
            del self.requests[:-1000]


def verify_access_token(state, token):
    """glewlwyd's JWT access token: signature against its JWKS, iss, exp. Returns the claims."""
    try:
        header = json.loads(b64url_decode(token.split(".")[0]))
    except (ValueError, IndexError):
        raise Rejected(401, None, "invalid_token: not a JWT")
    for attempt in (False, True):
        try:
            parsed = jwt.JWT(algs=["ES256", "RS256", "PS256", "EdDSA"], check_claims={"exp": None})
            parsed.leeway = 0  # jwcrypto's default is 60 s: a 2-second token would live a minute
            parsed.deserialize(token, state.jwks(refresh=attempt))
            claims = json.loads(parsed.claims)
            break
        except jwt.JWTExpired:
            raise Rejected(401, None, "invalid_token: expired")
        except Exception as error:  # an unknown kid after a key rotation: reload once
            if attempt:
                raise Rejected(401, None, f"invalid_token: {type(error).__name__}")
    if claims.get("iss") not in state.issuers:
        raise Rejected(401, None, f"invalid_token: unexpected iss {claims.get('iss')!r}")
    if header.get("typ", "").lower() not in ("at+jwt", "application/at+jwt"):
        raise Rejected(401, None, "invalid_token: not an at+jwt access token")
    return claims


def verify_proof_jwcrypto(proof, access_token, method, url):
    """The checks Auth0's verifier makes, for the algorithms it does not take."""
    header = json.loads(b64url_decode(proof.split(".")[0]))
    if header.get("typ") != "dpop+jwt":
        raise Rejected(401, "DPoP", "invalid_dpop_proof: typ is not dpop+jwt")
    if header.get("alg") not in DPOP_ALGS:
        raise Rejected(401, "DPoP", "invalid_dpop_proof: unsupported alg")
    public = header.get("jwk")
    if not isinstance(public, dict) or any(name in public for name in ("d", "p", "q", "dp", "dq", "qi")):
        raise Rejected(401, "DPoP", "invalid_dpop_proof: jwk missing or private")
    try:
        key = jwk.JWK(**public)
        token = jws.JWS()
        token.deserialize(proof)
        token.verify(key, alg=header["alg"])
        claims = json.loads(token.payload)
    except Exception as error:
        raise Rejected(401, "DPoP", f"invalid_dpop_proof: signature ({type(error).__name__})")
    for name in ("iat", "ath", "htm", "htu", "jti"):
        if name not in claims:
            raise Rejected(401, "DPoP", f"invalid_dpop_proof: missing {name}")
    now = time.time()
    if not isinstance(claims["iat"], (int, float)) or claims["iat"] < now - IAT_OFFSET or claims["iat"] > now + IAT_LEEWAY:
        raise Rejected(401, "DPoP", "invalid_dpop_proof: iat out of window")
    if claims["htm"] != method:
        raise Rejected(401, "DPoP", "invalid_dpop_proof: htm mismatch")
    if normalize_htu(claims["htu"]) != normalize_htu(url):
        raise Rejected(401, "DPoP", "invalid_dpop_proof: htu mismatch")
    if claims["ath"] != sha256_b64url(access_token):
        raise Rejected(401, "DPoP", "invalid_dpop_proof: ath mismatch")
    return claims


def verify_dpop(state, token, proof, method, url, entry):
    if "," in proof:
        raise Rejected(401, "DPoP", "invalid_dpop_proof: several proofs")
    try:
        header = json.loads(b64url_decode(proof.split(".")[0]))
        unverified = json.loads(b64url_decode(proof.split(".")[1]))
    except (ValueError, IndexError):
        raise Rejected(401, "DPoP", "invalid_dpop_proof: not a JWT")
    entry["proof"] = {
        "alg": header.get("alg"), "typ": header.get("typ"),
        "htm": unverified.get("htm"), "htu": unverified.get("htu"), "jti": unverified.get("jti"),
        "iat": unverified.get("iat"), "ath": "ath" in unverified, "nonce": unverified.get("nonce"),
    }
    if header.get("alg") == "ES256":
        entry["verified_by"] = "auth0-api-python"
        try:
            claims = asyncio.run(state.auth0.verify_dpop_proof(access_token=token, proof=proof,
                                                               http_method=method, http_url=url))
        except BaseAuthError as error:
            raise Rejected(401, "DPoP", f"invalid_dpop_proof: {error}")
        if claims["htm"] != method:  # auth0 compares htm case-insensitively; RFC 9110 methods are case-sensitive
            raise Rejected(401, "DPoP", "invalid_dpop_proof: htm mismatch")
    else:
        entry["verified_by"] = "jwcrypto"
        claims = verify_proof_jwcrypto(proof, token, method, url)
    jkt = thumbprint(header["jwk"])
    entry["proof"]["jkt"] = jkt
    return claims, jkt


class Handler(BaseHTTPRequestHandler):
    server_version = "dpop-verifier/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        sys.stderr.write("%s - %s\n" % (self.address_string(), format % args))

    def external_url(self):
        # The TLS front says which URL the client used (its own origin, /resource
        # stripped); without a front, a client could pick its own htu this way.
        original = self.headers.get("X-Original-URL") if self.server.behind_front else None
        if original:
            return original
        return f"http://127.0.0.1:{self.server.server_port}{self.path}"

    def downgrade(self, body):
        headers = {"Content-Type": self.headers.get("Content-Type", "application/x-www-form-urlencoded")}
        if self.headers.get("Authorization"):
            headers["Authorization"] = self.headers["Authorization"]
        request = urllib.request.Request(self.server.downgrade, data=body, method="POST", headers=headers)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=30) as response:
                status, data = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, data = error.code, error.read()
        self.server.state.log({"time": time.time(), "method": "POST", "url": self.external_url(),
                               "path": "/downgrade/token", "proof": self.proof_summary(), "status": status})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)
        return None

    def proof_summary(self):
        proof = self.headers.get("DPoP")
        if not proof:
            return None
        try:
            claims = json.loads(b64url_decode(proof.split(".")[1]))
        except (ValueError, IndexError):
            return {"malformed": True}
        return {"htm": claims.get("htm"), "htu": claims.get("htu"), "jti": claims.get("jti"),
                "iat": claims.get("iat"), "ath": "ath" in claims, "nonce": claims.get("nonce")}

    def answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        path = parts.path
        state = self.server.state
        if path == "/test/requests":
            if self.command == "DELETE":
                with state.lock:
                    state.requests.clear()
                return self.answer(200, {"cleared": True})
            with state.lock:
                return self.answer(200, {"requests": list(state.requests)})
        if path == "/test/nonce":
            return self.answer(200, {"nonce": state.nonce})
        if path == "/api/redirect":
            target = query.get("to", ["/api/me"])[0]
            status = int(query.get("status", ["302"])[0])
            self.send_response(status)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            state.log({"method": self.command, "url": self.external_url(), "redirect": target, "status": status})
            return None
        if path == "/api/redirect/chain":
            hops = int(query.get("n", ["2"])[0])
            target = f"/api/redirect/chain?n={hops - 1}" if hops > 1 else "/api/me"
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            state.log({"method": self.command, "url": self.external_url(), "redirect": target, "status": 302})
            return None
        if path == "/downgrade/token":
            return self.downgrade(body)
        if path == "/api/nonce/loop":
            nonce = secrets.token_urlsafe(16)
            state.log({"time": time.time(), "method": self.command, "url": self.external_url(), "path": path,
                       "scheme": self.headers.get("Authorization", "").partition(" ")[0] or None,
                       "proof": self.proof_summary(), "status": 401, "error": "use_dpop_nonce"})
            return self.answer(401, {"error": "use_dpop_nonce"}, [
                ("WWW-Authenticate", f'DPoP error="use_dpop_nonce", error_description="a new nonce, always", '
                                     f'algs="{" ".join(DPOP_ALGS)}"'),
                ("DPoP-Nonce", nonce)])
        if path in ("/api/me", "/api/nonce/me", "/api/bearer/me", "/api/mtls/me"):
            return self.resource(path, query, state)
        return self.answer(404, {"error": "not_found"})

    def resource(self, path, query, state):
        method = self.command
        url = self.external_url()
        authorization = self.headers.get("Authorization", "")
        proof = self.headers.get("DPoP")
        scheme, _, token = authorization.partition(" ")
        scheme_lower = scheme.lower()
        token = token.strip()
        entry = {"time": time.time(), "method": method, "url": url, "path": path,
                 "scheme": scheme if authorization else None, "proof": None}
        nonce_required = path == "/api/nonce/me"
        if nonce_required and query.get("rotate") == ["1"]:
            with state.lock:
                state.nonce = secrets.token_urlsafe(16)
        extra = [("DPoP-Nonce", state.nonce)] if nonce_required else []
        algs = " ".join(DPOP_ALGS)
        try:
            if path in ("/api/bearer/me", "/api/mtls/me"):
                if scheme_lower != "bearer" or not token:
                    raise Rejected(401, "Bearer", "invalid_request: a Bearer token is required")
                claims = verify_access_token(state, token)
                cnf = claims.get("cnf") or {}
                if path == "/api/bearer/me" and cnf.get("jkt"):
                    raise Rejected(401, "Bearer", "invalid_token: a DPoP-bound token sent as a bearer token")
                if path == "/api/mtls/me":
                    certificate = self.headers.get("X-Client-Cert-S256") if self.server.behind_front else None
                    entry["client_certificate_x5t#S256"] = certificate
                    if not cnf.get("x5t#S256"):
                        raise Rejected(401, "Bearer", "invalid_token: the token is not certificate-bound")
                    if certificate != cnf["x5t#S256"]:
                        raise Rejected(401, "Bearer", "invalid_token: the client certificate is not the token's")
                entry["verified_by"] = "jwcrypto"
            else:
                if scheme_lower != "dpop" or not token:
                    description = "invalid_request: DPoP is required"
                    if scheme_lower == "bearer" and token:
                        try:
                            bound = (verify_access_token(state, token).get("cnf") or {}).get("jkt")
                        except Rejected:
                            bound = None
                        if bound:
                            description = "invalid_token: a DPoP-bound token sent as a bearer token"
                    raise Rejected(401, "DPoP", description)
                if not proof:
                    raise Rejected(401, "DPoP", "invalid_dpop_proof: no DPoP header")
                claims = verify_access_token(state, token)
                proof_claims, jkt = verify_dpop(state, token, proof, method, url, entry)
                if (claims.get("cnf") or {}).get("jkt") != jkt:
                    raise Rejected(401, "DPoP", "invalid_token: the proof key is not the token's cnf.jkt")
                if nonce_required and proof_claims.get("nonce") != state.nonce:
                    raise Rejected(401, "DPoP", "use_dpop_nonce: the resource server requires its nonce", nonce=True)
                if not state.remember_jti(proof_claims["jti"], proof_claims["iat"]):
                    raise Rejected(401, "DPoP", "invalid_dpop_proof: jti replayed")
        except Rejected as rejection:
            code, _, description = rejection.description.partition(": ")
            challenge = rejection.challenge or ("DPoP" if scheme_lower == "dpop" else "Bearer")
            if challenge == "DPoP":
                value = f'DPoP error="{code}", error_description="{description}", algs="{algs}"'
                if code == "invalid_request" and not authorization:
                    value = f'DPoP algs="{algs}"'
            else:
                value = f'Bearer error="{code}", error_description="{description}"'
            entry.update({"status": rejection.status, "error": code, "error_description": description})
            state.log(entry)
            headers = [("WWW-Authenticate", value)] + extra
            if rejection.nonce and not extra:
                headers.append(("DPoP-Nonce", state.nonce))
            return self.answer(rejection.status, {"error": code, "error_description": description}, headers)
        entry.update({"status": 200, "sub": claims.get("sub"), "client_id": claims.get("client_id")})
        state.log(entry)
        body = {"sub": claims.get("sub"), "client_id": claims.get("client_id"), "scope": claims.get("scope"),
                "method": method, "url": url, "cnf": claims.get("cnf"), "verified_by": entry.get("verified_by")}
        return self.answer(200, body, extra)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--issuer", action="append", required=True)
    parser.add_argument("--jwks", required=True)
    parser.add_argument("--downgrade", required=True, help="glewlwyd's token endpoint, for /downgrade/token")
    parser.add_argument("--behind-front", action="store_true",
                        help="trust X-Original-URL and X-Client-Cert-S256 (set by front.py)")
    arguments = parser.parse_args()
    # Tests connect all at once; the default backlog of 5 drops connections (see op.py).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), Handler)
    server.daemon_threads = True
    server.state = State(set(arguments.issuer), arguments.jwks)
    server.downgrade = arguments.downgrade
    server.behind_front = arguments.behind_front
    print(f"verifier: serving on 127.0.0.1:{arguments.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
