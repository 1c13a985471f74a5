"""Checks a running glewlwyd (scripts/glewlwyd.sh start) with raw HTTP, not with our Swift library.

    selftest.py ENV_JSON

Each check prints one line, `ok   NAME: what was seen` or `FAIL NAME: ...`, and
the last line is `N passed, N failed`. Exit status 1 when a check failed. The
checks are the evidence of Tests/Glewlwyd/README.md's capability matrix: what
glewlwyd 2.7.5 does with DPoP (RFC 9449), PAR (RFC 9126), JAR (RFC 9101),
private_key_jwt, refresh tokens, the device flow and, when started with --tls,
mutual TLS (RFC 8705); and that the resource server (verifier.py) checks
proofs as RFC 9449 says.
"""

import base64
import hashlib
import json
import os
import secrets
import subprocess
import sys
import time
import traceback
from urllib.parse import parse_qs, urlencode, urlsplit

import requests
from jwcrypto import jwk, jwt

ENV = json.load(open(sys.argv[1]))
SESSION = requests.Session()
SESSION.trust_env = False  # everything is on 127.0.0.1: never a proxy
if "tls" in ENV:
    SESSION.verify = ENV["tls"]["ca"]
RESULTS = []


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims_of(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=" * (-len(token.split(".")[1]) % 4)))


class DPoPKey:
    def __init__(self, kty="EC"):
        if kty == "EC":
            self.key, self.alg = jwk.JWK.generate(kty="EC", crv="P-256"), "ES256"
        elif kty == "OKP":
            self.key, self.alg = jwk.JWK.generate(kty="OKP", crv="Ed25519"), "EdDSA"
        else:
            self.key, self.alg = jwk.JWK.generate(kty="RSA", size=2048), "PS256"
        self.public = json.loads(self.key.export_public())
        self.jkt = self.key.thumbprint()

    def proof(self, method, url, access_token=None, nonce=None, iat=None, jti=None):
        claims = {"jti": jti or secrets.token_urlsafe(16), "htm": method, "htu": url.split("?")[0].split("#")[0],
                  "iat": int(iat if iat is not None else time.time())}
        if access_token:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode()).digest())
        if nonce:
            claims["nonce"] = nonce
        token = jwt.JWT(header={"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public}, claims=claims)
        token.make_signed_token(self.key)
        return token.serialize()


def check(name):
    def run(function):
        try:
            detail = function()
            RESULTS.append(True)
            print(f"ok   {name}: {detail}", flush=True)
        except Exception as error:  # a failed check is reported, the others still run
            RESULTS.append(False)
            print(f"FAIL {name}: {error}", flush=True)
            if os.environ.get("SELFTEST_TRACE"):
                traceback.print_exc()
        return function
    return run


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def plugin(name="oidc"):
    return ENV["plugins"][name]


def client(client_id):
    return ENV["clients"][client_id]


def basic(client_id):
    c = client(client_id)
    return (c["client_id"], c["client_secret"])


def token_request(endpoint, data, key=None, auth=None, nonce=None, headers=None, cert=None):
    headers = dict(headers or {})
    if key is not None:
        headers["DPoP"] = key.proof("POST", endpoint, nonce=nonce)
    return SESSION.post(endpoint, data=data, auth=auth, headers=headers, timeout=30, cert=cert)


def client_assertion(client_id, audience):
    c = client(client_id)
    key = jwk.JWK.from_pem(open(c["private_key"], "rb").read())
    now = int(time.time())
    assertion = jwt.JWT(header={"alg": c["alg"], "kid": c["kid"], "typ": "JWT"},
                        claims={"iss": c["client_id"], "sub": c["client_id"], "aud": audience,
                                "jti": secrets.token_urlsafe(16), "iat": now, "exp": now + 60})
    assertion.make_signed_token(key)
    return {"client_id": c["client_id"],
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion.serialize()}


def pkce():
    verifier = secrets.token_urlsafe(48)
    return verifier, b64url(hashlib.sha256(verifier.encode()).digest())


def browse(url, *extra):
    result = subprocess.run(ENV["browser"] + [url, "--username", ENV["user"]["username"],
                                              "--password", ENV["user"]["password"], *extra],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"browser exit {result.returncode}: {result.stderr.strip()[:300]}")
    return result.stdout.strip()


def authorize(client_id="public", plugin_name="oidc", extra=None, redirect_uri=None):
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(8)
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri or ENV["redirect_uris"][0],
              "scope": "openid api", "state": state, "nonce": secrets.token_urlsafe(8),
              "code_challenge": challenge, "code_challenge_method": "S256"}
    params.update(extra or {})
    location = browse(plugin(plugin_name)["authorize"] + "?" + urlencode(params))
    query = parse_qs(urlsplit(location).query)
    expect("code" in query, f"no code in {location}")
    expect(query.get("state") == [state], "state not echoed")
    return query["code"][0], verifier, query


def code_exchange(code, verifier, client_id="public", key=None, plugin_name="oidc", nonce=None):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": ENV["redirect_uris"][0],
            "code_verifier": verifier}
    auth = None
    if client(client_id)["type"] == "public":
        data["client_id"] = client_id
    else:
        auth = basic(client_id)
    return token_request(plugin(plugin_name)["token"], data, key=key, auth=auth, nonce=nonce)


def resource(url, token, key=None, method="GET", nonce=None, scheme=None, proof_url=None):
    headers = {}
    if key is not None:
        headers["Authorization"] = f"{scheme or 'DPoP'} {token}"
        headers["DPoP"] = key.proof(method, proof_url or url, access_token=token, nonce=nonce)
    else:
        headers["Authorization"] = f"{scheme or 'Bearer'} {token}"
    return SESSION.request(method, url, headers=headers, timeout=30, allow_redirects=False)


# --- Metadata ----------------------------------------------------------------

@check("discovery")
def _():
    metadata = SESSION.get(plugin()["discovery"], timeout=30).json()
    expect(metadata["issuer"] == ENV["issuer"], f"issuer {metadata['issuer']}")
    expect("ES256" in metadata.get("dpop_signing_alg_values_supported", []), "no ES256 in dpop_signing_alg_values")
    expect(metadata.get("pushed_authorization_request_endpoint") == plugin()["par"], "no PAR endpoint")
    expect(metadata.get("require_pushed_authorization_requests") is False, "PAR required on oidc")
    par_required = SESSION.get(plugin("oidcpar")["discovery"], timeout=30).json()
    expect(par_required.get("require_pushed_authorization_requests") is True, "oidcpar does not require PAR")
    expect("private_key_jwt" in metadata["token_endpoint_auth_methods_supported"], "no private_key_jwt")
    return (f"dpop algs {metadata['dpop_signing_alg_values_supported']}; "
            f"iss parameter advertised: {metadata.get('authorization_response_iss_parameter_supported')}; "
            f"grant_types_supported {metadata.get('grant_types_supported')}")


# --- DPoP at the token endpoint ------------------------------------------------

STATE = {}


@check("dpop client_credentials")
def _():
    key = DPoPKey()
    response = token_request(plugin()["token"], {"grant_type": "client_credentials", "scope": "api"},
                             key=key, auth=basic("confidential"))
    expect(response.status_code == 200, f"HTTP {response.status_code} {response.text[:200]}")
    body = response.json()
    expect(body["token_type"] == "DPoP", f"token_type {body['token_type']}")
    cnf = claims_of(body["access_token"]).get("cnf", {})
    expect(cnf.get("jkt") == key.jkt, f"cnf {cnf} is not the key's thumbprint {key.jkt}")
    STATE["cc"] = (body["access_token"], key)
    return f"token_type {body['token_type']}, cnf.jkt = the proof key's RFC 7638 thumbprint"


@check("bearer client_credentials")
def _():
    response = token_request(plugin()["token"], {"grant_type": "client_credentials", "scope": "api"},
                             auth=basic("confidential"))
    body = response.json()
    expect(response.status_code == 200 and body["token_type"].lower() == "bearer", f"{response.status_code} {body}")
    expect("cnf" not in claims_of(body["access_token"]), "a bearer token with cnf")
    STATE["bearer"] = body["access_token"]
    return f"no proof -> token_type {body['token_type']}, no cnf"


@check("dpop required for a dpop_bound_access_tokens client")
def _():
    response = token_request(plugin()["token"], {"grant_type": "client_credentials", "scope": "api"},
                             auth=basic("dpop-bound"))
    expect(response.status_code in (400, 401, 403), f"HTTP {response.status_code}")
    with_proof = token_request(plugin()["token"], {"grant_type": "client_credentials", "scope": "api"},
                               key=DPoPKey(), auth=basic("dpop-bound"))
    expect(with_proof.status_code == 200, f"with a proof: HTTP {with_proof.status_code}")
    return f"without a proof HTTP {response.status_code} {response.json().get('error')}; with one 200"


@check("dpop proof for another URL or method refused by glewlwyd")
def _():
    key = DPoPKey()
    headers = {"DPoP": key.proof("POST", plugin()["userinfo"])}
    wrong_url = SESSION.post(plugin()["token"], data={"grant_type": "client_credentials", "scope": "api"},
                             auth=basic("confidential"), headers=headers, timeout=30)
    headers = {"DPoP": key.proof("GET", plugin()["token"])}
    wrong_method = SESSION.post(plugin()["token"], data={"grant_type": "client_credentials", "scope": "api"},
                                auth=basic("confidential"), headers=headers, timeout=30)
    expect(wrong_url.status_code >= 400 and wrong_method.status_code >= 400,
           f"{wrong_url.status_code} {wrong_method.status_code}")
    return (f"htu: HTTP {wrong_url.status_code} {wrong_url.json().get('error')}; "
            f"htm: HTTP {wrong_method.status_code} {wrong_method.json().get('error')}")


@check("dpop replayed jti and stale iat refused by glewlwyd")
def _():
    key = DPoPKey()
    proof = key.proof("POST", plugin()["token"])
    first = SESSION.post(plugin()["token"], data={"grant_type": "client_credentials", "scope": "api"},
                         auth=basic("confidential"), headers={"DPoP": proof}, timeout=30)
    again = SESSION.post(plugin()["token"], data={"grant_type": "client_credentials", "scope": "api"},
                         auth=basic("confidential"), headers={"DPoP": proof}, timeout=30)
    stale = SESSION.post(plugin()["token"], data={"grant_type": "client_credentials", "scope": "api"},
                         auth=basic("confidential"),
                         headers={"DPoP": key.proof("POST", plugin()["token"], iat=time.time() - 600)}, timeout=30)
    expect(first.status_code == 200, f"first {first.status_code}")
    expect(again.status_code >= 400, f"replay {again.status_code}")
    expect(stale.status_code >= 400, f"stale {stale.status_code}")
    return (f"replay HTTP {again.status_code} {again.json().get('error')}; "
            f"iat 600 s old HTTP {stale.status_code} {stale.json().get('error')}")


@check("dpop other algorithms (EdDSA, PS256) at glewlwyd")
def _():
    seen = []
    for kty in ("OKP", "RSA"):
        key = DPoPKey(kty)
        response = token_request(plugin()["token"], {"grant_type": "client_credentials", "scope": "api"},
                                 key=key, auth=basic("confidential"))
        expect(response.status_code == 200, f"{key.alg}: HTTP {response.status_code} {response.text[:200]}")
        expect(claims_of(response.json()["access_token"])["cnf"]["jkt"] == key.jkt, f"{key.alg}: cnf.jkt")
        STATE[f"cc-{key.alg}"] = (response.json()["access_token"], key)
        seen.append(key.alg)
    return f"{', '.join(seen)} accepted and bound"


@check("dpop nonce at the token endpoint (oidcnonce)")
def _():
    key = DPoPKey()
    first = token_request(plugin("oidcnonce")["token"], {"grant_type": "client_credentials", "scope": "api"},
                          key=key, auth=basic("confidential"))
    expect(first.status_code == 400, f"HTTP {first.status_code} {first.text[:200]}")
    expect(first.json().get("error") == "use_dpop_nonce", f"error {first.json()}")
    nonce = first.headers.get("DPoP-Nonce")
    expect(nonce, "no DPoP-Nonce header")
    second = token_request(plugin("oidcnonce")["token"], {"grant_type": "client_credentials", "scope": "api"},
                           key=key, auth=basic("confidential"), nonce=nonce)
    expect(second.status_code == 200, f"with the nonce: HTTP {second.status_code} {second.text[:200]}")
    third = token_request(plugin("oidcnonce")["token"], {"grant_type": "client_credentials", "scope": "api"},
                          key=key, auth=basic("confidential"), nonce=second.headers.get("DPoP-Nonce") or nonce)
    return (f"no nonce -> 400 use_dpop_nonce + DPoP-Nonce; with it 200 (DPoP-Nonce on the 200: "
            f"{'yes' if second.headers.get('DPoP-Nonce') else 'no'}; the same nonce again: HTTP {third.status_code})")


@check("dpop nonce at PAR and userinfo (oidcnonce)")
def _():
    key = DPoPKey()
    endpoint = plugin("oidcnonce")["token"]
    code, verifier, _ = authorize(plugin_name="oidcnonce")
    first = code_exchange(code, verifier, key=key, plugin_name="oidcnonce")
    nonce = first.headers.get("DPoP-Nonce")
    tokens = code_exchange(code, verifier, key=key, plugin_name="oidcnonce", nonce=nonce)
    expect(tokens.status_code == 200, f"code with the nonce: HTTP {tokens.status_code} {tokens.text[:200]}")
    token = tokens.json()["access_token"]
    userinfo = resource(plugin("oidcnonce")["userinfo"], token, key)
    challenge_header = userinfo.headers.get("WWW-Authenticate", "")
    expect(userinfo.status_code == 401 and "use_dpop_nonce" in challenge_header, f"{userinfo.status_code} {challenge_header}")
    again = resource(plugin("oidcnonce")["userinfo"], token, key, nonce=userinfo.headers.get("DPoP-Nonce"))
    expect(again.status_code == 200, f"userinfo with the nonce: HTTP {again.status_code}")
    verifier, challenge = pkce()
    data = {"response_type": "code", "client_id": "confidential", "redirect_uri": ENV["redirect_uris"][0],
            "scope": "openid api", "state": "s", "nonce": "n", "code_challenge": challenge,
            "code_challenge_method": "S256"}
    par_without = SESSION.post(plugin("oidcnonce")["par"], data=data, auth=basic("confidential"),
                               headers={"DPoP": key.proof("POST", plugin("oidcnonce")["par"])}, timeout=30)
    return (f"userinfo (a resource server): 401 {challenge_header[:45]}... + DPoP-Nonce, then 200; "
            f"PAR with a proof and no nonce: HTTP {par_without.status_code} {par_without.json().get('error')} "
            f"(DPoP-Nonce {'sent' if par_without.headers.get('DPoP-Nonce') else 'not sent'})")


@check("a token endpoint that answers Bearer to a DPoP request (/downgrade/token)")
def _():
    key = DPoPKey()
    response = token_request(ENV["resource"]["downgrade_token"], {"grant_type": "client_credentials", "scope": "api"},
                             key=key, auth=basic("confidential"))
    body = response.json()
    expect(response.status_code == 200 and body["token_type"].lower() == "bearer", f"{response.status_code} {body}")
    expect("cnf" not in claims_of(body["access_token"]), "cnf present")
    return f"a request with a proof -> glewlwyd's token_type {body['token_type']}, no cnf"


@check("5-second access tokens (oidcshort) expire at the resource server")
def _():
    key = DPoPKey()
    body = token_request(plugin("oidcshort")["token"], {"grant_type": "client_credentials", "scope": "api"},
                         key=key, auth=basic("confidential")).json()
    expect(body.get("expires_in") == 5, f"expires_in {body.get('expires_in')}")
    fresh = resource(ENV["resource"]["me"], body["access_token"], key)
    time.sleep(6.5)
    stale = resource(ENV["resource"]["me"], body["access_token"], key)
    expect(fresh.status_code == 200 and stale.status_code == 401, f"{fresh.status_code} {stale.status_code}")
    return f"expires_in 5; 200, then after 6.5 s 401 {stale.headers.get('WWW-Authenticate', '')[:45]}..."


# --- The resource server (verifier.py) -------------------------------------------

@check("resource: dpop token with a proof")
def _():
    token, key = STATE["cc"]
    response = resource(ENV["resource"]["me"], token, key)
    expect(response.status_code == 200, f"HTTP {response.status_code} {response.text[:200]}")
    expect(response.json()["verified_by"] == "auth0-api-python", f"verified by {response.json()['verified_by']}")
    for alg in ("EdDSA", "PS256"):
        other_token, other_key = STATE[f"cc-{alg}"]
        other = resource(ENV["resource"]["me"], other_token, other_key)
        expect(other.status_code == 200, f"{alg}: HTTP {other.status_code} {other.text[:200]}")
    return "200 (ES256 proof checked by auth0-api-python; EdDSA and PS256 by jwcrypto)"


@check("resource: hostile proofs refused")
def _():
    token, key = STATE["cc"]
    seen = []
    proof = key.proof("GET", ENV["resource"]["me"], access_token=token)
    headers = {"Authorization": f"DPoP {token}", "DPoP": proof}
    expect(SESSION.get(ENV["resource"]["me"], headers=headers, timeout=30).status_code == 200, "first use")
    replay = SESSION.get(ENV["resource"]["me"], headers=headers, timeout=30)
    seen.append(f"replayed jti {replay.status_code}")
    other_url = resource(ENV["resource"]["me"], token, key, proof_url=ENV["resource"]["bearer_me"])
    seen.append(f"other htu {other_url.status_code}")
    other_method = SESSION.post(ENV["resource"]["me"], headers={
        "Authorization": f"DPoP {token}", "DPoP": key.proof("GET", ENV["resource"]["me"], access_token=token)}, timeout=30)
    seen.append(f"other htm {other_method.status_code}")
    stale = SESSION.get(ENV["resource"]["me"], headers={
        "Authorization": f"DPoP {token}",
        "DPoP": key.proof("GET", ENV["resource"]["me"], access_token=token, iat=time.time() - 3600)}, timeout=30)
    seen.append(f"stale iat {stale.status_code}")
    no_ath = SESSION.get(ENV["resource"]["me"], headers={
        "Authorization": f"DPoP {token}", "DPoP": key.proof("GET", ENV["resource"]["me"])}, timeout=30)
    seen.append(f"no ath {no_ath.status_code}")
    other_key = resource(ENV["resource"]["me"], token, DPoPKey())
    seen.append(f"another key {other_key.status_code}")
    as_bearer = resource(ENV["resource"]["me"], token, None, scheme="Bearer")
    seen.append(f"sent as Bearer {as_bearer.status_code} ({as_bearer.headers.get('WWW-Authenticate', '')[:40]}...)")
    expect(all(r.status_code == 401 for r in (replay, other_url, other_method, stale, no_ath, other_key, as_bearer)),
           "; ".join(seen))
    expect(as_bearer.headers.get("WWW-Authenticate", "").startswith("DPoP"), "no DPoP challenge")
    return "; ".join(seen)


@check("resource: nonce demanded and honoured")
def _():
    token, key = STATE["cc"]
    first = resource(ENV["resource"]["nonce_me"], token, key)
    expect(first.status_code == 401, f"HTTP {first.status_code}")
    challenge = first.headers.get("WWW-Authenticate", "")
    expect('error="use_dpop_nonce"' in challenge, f"challenge {challenge}")
    nonce = first.headers["DPoP-Nonce"]
    second = resource(ENV["resource"]["nonce_me"], token, key, nonce=nonce)
    expect(second.status_code == 200, f"with the nonce: HTTP {second.status_code} {second.text[:200]}")
    return f"401 {challenge[:60]}... + DPoP-Nonce, then 200"


@check("resource: a nonce loop")
def _():
    token, key = STATE["cc"]
    first = resource(ENV["resource"]["nonce_loop"], token, key)
    second = resource(ENV["resource"]["nonce_loop"], token, key, nonce=first.headers["DPoP-Nonce"])
    expect(first.status_code == 401 and second.status_code == 401, f"{first.status_code} {second.status_code}")
    expect(first.headers["DPoP-Nonce"] != second.headers["DPoP-Nonce"], "the same nonce twice")
    return "401 use_dpop_nonce with a new nonce each time"


@check("resource: bearer-only resource")
def _():
    ok = resource(ENV["resource"]["bearer_me"], STATE["bearer"])
    token, key = STATE["cc"]
    bound = resource(ENV["resource"]["bearer_me"], token)
    expect(ok.status_code == 200 and bound.status_code == 401, f"{ok.status_code} {bound.status_code}")
    return "bearer token 200; a DPoP-bound token sent as bearer 401"


@check("resource: redirect hop and the request log")
def _():
    token, key = STATE["cc"]
    first = resource(ENV["resource"]["redirect"], token, key)
    expect(first.status_code == 302, f"HTTP {first.status_code}")
    target = ENV["resource"]["base_url"] + first.headers["Location"]
    second = resource(target, token, key)
    expect(second.status_code == 200, f"second hop HTTP {second.status_code}")
    # The log is shared with whatever else runs against this resource server:
    # find this key's entries rather than clearing it.
    log = SESSION.get(ENV["resource"]["requests"], timeout=30).json()["requests"]
    mine = [entry for entry in log if (entry.get("proof") or {}).get("jkt") == key.jkt and entry.get("status") == 200
            and entry["proof"]["htu"] == target and entry["proof"]["ath"]]
    expect(mine, f"no log entry for the second hop among {len(log)}")
    return f"302 then 200 with a new proof for {urlsplit(target).path}; /test/requests shows htm, htu, jti, ath"


# --- Authorization code, refresh --------------------------------------------------

@check("authorization code + PKCE + DPoP (public client), iss in the response")
def _():
    key = DPoPKey()
    code, verifier, query = authorize()
    expect(query.get("iss") == [ENV["issuer"]], f"iss {query.get('iss')}")
    response = code_exchange(code, verifier, key=key)
    expect(response.status_code == 200, f"HTTP {response.status_code} {response.text[:200]}")
    body = response.json()
    expect(body["token_type"] == "DPoP" and "refresh_token" in body, f"{body.get('token_type')} {sorted(body)}")
    expect(claims_of(body["access_token"])["cnf"]["jkt"] == key.jkt, "cnf.jkt")
    STATE["public"] = (body, key)
    return "code (with iss) -> DPoP token, refresh token"


@check("refresh of a public client's DPoP-bound refresh token")
def _():
    body, key = STATE["public"]
    endpoint = plugin()["token"]
    data = {"grant_type": "refresh_token", "refresh_token": body["refresh_token"], "client_id": "public"}
    no_proof = token_request(endpoint, data)
    other_key = token_request(endpoint, data, key=DPoPKey())
    same_key = token_request(endpoint, data, key=key)
    expect(no_proof.status_code >= 400, f"without a proof: HTTP {no_proof.status_code}")
    expect(other_key.status_code >= 400, f"another key: HTTP {other_key.status_code}")
    expect(same_key.status_code == 200, f"the same key: HTTP {same_key.status_code} {same_key.text[:200]}")
    refreshed = same_key.json()
    rotated = "refresh_token" in refreshed and refreshed["refresh_token"] != body["refresh_token"]
    expect(claims_of(refreshed["access_token"])["cnf"]["jkt"] == key.jkt, "new token not bound to the key")
    old_again = token_request(endpoint, data, key=key)
    STATE["public-refreshed"] = (refreshed, key)
    return (f"no proof HTTP {no_proof.status_code} {no_proof.json().get('error')}; another key HTTP "
            f"{other_key.status_code} {other_key.json().get('error')}; same key 200 (rotated: {rotated}); "
            f"the rotated-out token again: HTTP {old_again.status_code}")


@check("dpop_jkt binds the code to the key")
def _():
    key = DPoPKey()
    code, verifier, _ = authorize(extra={"dpop_jkt": key.jkt})
    wrong = code_exchange(code, verifier, key=DPoPKey())
    code, verifier, _ = authorize(extra={"dpop_jkt": key.jkt})
    right = code_exchange(code, verifier, key=key)
    expect(wrong.status_code >= 400 and right.status_code == 200, f"{wrong.status_code} {right.status_code}")
    return f"another key HTTP {wrong.status_code} {wrong.json().get('error')}; the key 200"


@check("revocation of a DPoP-bound refresh token")
def _():
    body, key = STATE["public-refreshed"]
    response = SESSION.post(plugin()["revocation"], data={"token": body["refresh_token"],
                                                          "token_type_hint": "refresh_token", "client_id": "public"},
                            timeout=30)
    confidential = token_request(plugin()["token"], {"grant_type": "client_credentials", "scope": "api"},
                                 key=DPoPKey(), auth=basic("confidential")).json()
    revoke = SESSION.post(plugin()["revocation"], data={"token": confidential["access_token"]},
                          auth=basic("confidential"), timeout=30)
    return (f"public client without authentication: HTTP {response.status_code}; "
            f"confidential client: HTTP {revoke.status_code} (glewlwyd does not check DPoP on /revoke, by design)")


# --- PAR, JAR, private_key_jwt ---------------------------------------------------------

@check("PAR (confidential client, DPoP), request_uri then code")
def _():
    key = DPoPKey()
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(8)
    data = {"response_type": "code", "client_id": "confidential", "redirect_uri": ENV["redirect_uris"][0],
            "scope": "openid api", "state": state, "nonce": "n", "code_challenge": challenge,
            "code_challenge_method": "S256"}
    response = SESSION.post(plugin()["par"], data=data, auth=basic("confidential"),
                            headers={"DPoP": key.proof("POST", plugin()["par"])}, timeout=30)
    expect(response.status_code in (200, 201), f"HTTP {response.status_code} {response.text[:200]}")
    body = response.json()
    expect(body["request_uri"].startswith("urn:ietf:params:oauth:request_uri:"), f"{body}")
    location = browse(plugin()["authorize"] + "?" + urlencode({"client_id": "confidential",
                                                                "request_uri": body["request_uri"]}))
    query = parse_qs(urlsplit(location).query)
    expect("code" in query and query["state"] == [state], location)
    tokens = code_exchange(query["code"][0], verifier, client_id="confidential", key=key)
    expect(tokens.status_code == 200, f"token HTTP {tokens.status_code} {tokens.text[:200]}")
    expect(claims_of(tokens.json()["access_token"]).get("cnf", {}).get("jkt") == key.jkt, "not bound")
    other = code_exchange(query["code"][0], verifier, client_id="confidential", key=key)
    return (f"{response.status_code} request_uri, expires_in {body.get('expires_in')}; code; DPoP token "
            f"(code replay HTTP {other.status_code})")


@check("PAR for a public client")
def _():
    verifier, challenge = pkce()
    data = {"response_type": "code", "client_id": "public", "redirect_uri": ENV["redirect_uris"][0],
            "scope": "openid api", "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"}
    response = SESSION.post(plugin()["par"], data=data, timeout=30)
    expect(response.status_code in (200, 201), f"HTTP {response.status_code} {response.text[:200]}")
    return f"HTTP {response.status_code} without client authentication"


@check("PAR required (oidcpar)")
def _():
    verifier, challenge = pkce()
    params = {"response_type": "code", "client_id": "public", "redirect_uri": ENV["redirect_uris"][0],
              "scope": "openid api", "state": "s", "nonce": "n", "code_challenge": challenge,
              "code_challenge_method": "S256"}
    direct = subprocess.run(ENV["browser"] + [plugin("oidcpar")["authorize"] + "?" + urlencode(params),
                                              "--username", ENV["user"]["username"], "--password", ENV["user"]["password"]],
                            capture_output=True, text=True, timeout=60)
    expect(direct.returncode != 0 or "error=" in direct.stdout, f"a direct request got {direct.stdout.strip()}")
    pushed = SESSION.post(plugin("oidcpar")["par"], data=params, timeout=30).json()
    location = browse(plugin("oidcpar")["authorize"] + "?" + urlencode({"client_id": "public",
                                                                         "request_uri": pushed["request_uri"]}))
    expect("code=" in location, location)
    return f"direct: {(direct.stdout.strip() or direct.stderr.strip())[:120]}; pushed: code"


@check("private_key_jwt client_credentials")
def _():
    data = {"grant_type": "client_credentials", "scope": "api"}
    data.update(client_assertion("jwt", plugin()["token"]))
    response = token_request(plugin()["token"], data, key=DPoPKey())
    expect(response.status_code == 200, f"HTTP {response.status_code} {response.text[:200]}")
    return f"token_type {response.json()['token_type']}"


@check("JAR: request object signed with the client's key, by value and inside PAR")
def _():
    c = client("jwt")
    key = jwk.JWK.from_pem(open(c["private_key"], "rb").read())
    verifier, challenge = pkce()
    now = int(time.time())
    claims = {"iss": "jwt", "aud": ENV["issuer"], "client_id": "jwt", "response_type": "code",
              "redirect_uri": ENV["redirect_uris"][0], "scope": "openid api", "state": "jar-state",
              "nonce": "n", "code_challenge": challenge, "code_challenge_method": "S256",
              "iat": now, "nbf": now, "exp": now + 300, "jti": secrets.token_urlsafe(8)}
    request_object = jwt.JWT(header={"alg": "ES256", "kid": c["kid"], "typ": "oauth-authz-req+jwt"}, claims=claims)
    request_object.make_signed_token(key)
    location = browse(plugin()["authorize"] + "?" + urlencode({"client_id": "jwt", "response_type": "code",
                                                                "scope": "openid api",
                                                                "request": request_object.serialize()}))
    query = parse_qs(urlsplit(location).query)
    expect("code" in query and query.get("state") == ["jar-state"], location)
    data = {"grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": ENV["redirect_uris"][0],
            "code_verifier": verifier}
    data.update(client_assertion("jwt", plugin()["token"]))
    tokens = token_request(plugin()["token"], data, key=DPoPKey())
    expect(tokens.status_code == 200, f"token HTTP {tokens.status_code} {tokens.text[:200]}")
    claims["jti"] = secrets.token_urlsafe(8)
    pushed_object = jwt.JWT(header={"alg": "ES256", "kid": c["kid"], "typ": "oauth-authz-req+jwt"}, claims=claims)
    pushed_object.make_signed_token(key)
    par = {"client_id": "jwt", "request": pushed_object.serialize()}
    par.update(client_assertion("jwt", plugin()["par"]))
    pushed = SESSION.post(plugin()["par"], data=par, timeout=30)
    expect(pushed.status_code in (200, 201), f"PAR with a request object: HTTP {pushed.status_code} {pushed.text[:200]}")
    forged = jwt.JWT(header={"alg": "ES256", "kid": c["kid"]}, claims=claims)
    forged.make_signed_token(jwk.JWK.generate(kty="EC", crv="P-256"))
    refused = subprocess.run(ENV["browser"] + [plugin()["authorize"] + "?" + urlencode(
        {"client_id": "jwt", "response_type": "code", "scope": "openid api", "request": forged.serialize()}),
        "--username", ENV["user"]["username"], "--password", ENV["user"]["password"]],
        capture_output=True, text=True, timeout=60)
    expect(refused.returncode != 0 or "code=" not in refused.stdout, "a request object signed by another key worked")
    return "by value: code; in PAR: request_uri; signed by another key: refused"


@check("device flow with DPoP")
def _():
    key = DPoPKey()
    start = SESSION.post(plugin()["device"], data={"client_id": "public", "scope": "openid api"}, timeout=30)
    expect(start.status_code == 200, f"HTTP {start.status_code} {start.text[:200]}")
    body = start.json()
    result = subprocess.run(ENV["browser"] + ["--device", body["verification_uri_complete"],
                                              "--username", ENV["user"]["username"], "--password", ENV["user"]["password"]],
                            capture_output=True, text=True, timeout=60)
    expect(result.returncode == 0 and result.stdout.strip() == "authorized", result.stderr.strip()[:300])
    tokens = token_request(plugin()["token"], {"grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                                               "device_code": body["device_code"], "client_id": "public"}, key=key)
    expect(tokens.status_code == 200, f"token HTTP {tokens.status_code} {tokens.text[:200]}")
    expect(tokens.json()["token_type"] == "DPoP", tokens.json()["token_type"])
    return f"verification_uri {body['verification_uri']}; DPoP token"


@check("userinfo with a DPoP token at glewlwyd")
def _():
    body, key = STATE["public-refreshed"]
    token = body["access_token"]
    ok = resource(plugin()["userinfo"], token, key)
    as_bearer = resource(plugin()["userinfo"], token, None)
    expect(ok.status_code == 200, f"HTTP {ok.status_code} {ok.text[:200]}")
    return f"with a proof 200; the same token as Bearer HTTP {as_bearer.status_code}"


# --- mutual TLS (only with --tls) ---------------------------------------------------

if "tls" in ENV:
    TLS = ENV["tls"]
    MTLS = ENV["plugins"]["oidc"]["mtls_aliases"]

    @check("mtls: tls_client_auth, certificate-bound token, resource")
    def _():
        cert = (TLS["client_certificate"], TLS["client_key"])
        response = token_request(MTLS["token"], {"grant_type": "client_credentials", "scope": "api",
                                                 "client_id": "mtls"}, cert=cert)
        expect(response.status_code == 200, f"HTTP {response.status_code} {response.text[:200]}")
        token = response.json()["access_token"]
        cnf = claims_of(token).get("cnf", {})
        der = subprocess.run(["openssl", "x509", "-in", TLS["client_certificate"], "-outform", "DER"],
                             capture_output=True, check=True).stdout
        expect(cnf.get("x5t#S256") == b64url(hashlib.sha256(der).digest()), f"cnf {cnf}")
        mine = SESSION.get(ENV["resource"]["mtls_me"], headers={"Authorization": f"Bearer {token}"}, cert=cert, timeout=30)
        other = SESSION.get(ENV["resource"]["mtls_me"], headers={"Authorization": f"Bearer {token}"},
                            cert=(TLS["other_client_certificate"], TLS["other_client_key"]), timeout=30)
        none = SESSION.get(ENV["resource"]["mtls_me"], headers={"Authorization": f"Bearer {token}"}, timeout=30)
        wrong = token_request(MTLS["token"], {"grant_type": "client_credentials", "scope": "api", "client_id": "mtls"},
                              cert=(TLS["other_client_certificate"], TLS["other_client_key"]))
        expect(mine.status_code == 200 and other.status_code == 401 and none.status_code == 401,
               f"{mine.status_code} {other.status_code} {none.status_code}")
        expect(wrong.status_code >= 400, f"another certificate got a token: {wrong.status_code}")
        return ("token with cnf.x5t#S256 = the certificate's; resource: same certificate 200, another 401, none 401; "
                f"token endpoint with another certificate HTTP {wrong.status_code}")

    @check("mtls: self_signed_tls_client_auth")
    def _():
        cert = (TLS["self_signed_certificate"], TLS["self_signed_key"])
        response = token_request(MTLS["token"], {"grant_type": "client_credentials", "scope": "api",
                                                 "client_id": "mtls-self"}, cert=cert)
        expect(response.status_code == 200, f"HTTP {response.status_code} {response.text[:200]}")
        return "token"

    @check("mtls: metadata")
    def _():
        metadata = SESSION.get(plugin()["discovery"], timeout=30).json()
        methods = metadata["token_endpoint_auth_methods_supported"]
        expect("tls_client_auth" in methods and "self_signed_tls_client_auth" in methods, f"{methods}")
        expect(metadata.get("mtls_endpoint_aliases", {}).get("token_endpoint") == MTLS["token"],
               f"{metadata.get('mtls_endpoint_aliases')}")
        return f"mtls_endpoint_aliases {sorted(metadata['mtls_endpoint_aliases'])}; " \
               f"tls_client_certificate_bound_access_tokens: {metadata.get('tls_client_certificate_bound_access_tokens')}"


passed = RESULTS.count(True)
failed = RESULTS.count(False)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
