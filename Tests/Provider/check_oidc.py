"""Checks the provider's OpenID Connect side and its RFC 7523 test endpoint by hand.

    scripts/provider-start.sh --name oidccheck
    .build/provider/venv/bin/python Tests/Provider/check_oidc.py .build/provider/oidccheck/env.json
    scripts/provider-stop.sh --name oidccheck

It rotates the provider's signing key and signs alice out: use a provider of its
own. Prints what it finds (DOT's behaviour) and exits 1 at the first check
that fails.
"""

import base64
import hashlib
import json
import secrets
import subprocess
import sys
import time
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

import requests
from jwcrypto import jwk, jws, jwt

REDIRECT_URI = "http://127.0.0.1:8976/callback"
session = requests.Session()
session.trust_env = False


def check(condition, what):
    if not condition:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwks_set(env):
    return jwk.JWKSet.from_json(session.get(env["endpoints"]["jwks"]).text)


def kids(env):
    return [key["kid"] for key in session.get(env["endpoints"]["jwks"]).json()["keys"]]


def header_of(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))


def sign_in(env, client, scope="openid profile email read", nonce=None):
    """The code flow with PKCE: returns the token response."""
    verifier = b64url(secrets.token_bytes(32))
    state = secrets.token_urlsafe(8)
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT_URI,
        "scope": scope,
        "state": state,
        "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()),
        "code_challenge_method": "S256",
    }
    if nonce:
        query["nonce"] = nonce
    url = env["endpoints"]["authorize"] + "?" + urlencode(query)
    user = env["users"]["alice"]
    result = subprocess.run(
        [env["browser"], url, "--username", user["username"], "--password", user["password"]],
        capture_output=True,
        text=True,
    )
    check(result.returncode == 0, f"browser signed in ({result.stderr.strip()})")
    answer = parse_qs(urlsplit(result.stdout.strip()).query)
    check(answer.get("state") == [state], "state came back")
    form = {"grant_type": "authorization_code", "code": answer["code"][0], "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier}
    auth = None
    if client["client_secret"]:
        auth = (client["client_id"], client["client_secret"])
    else:
        form["client_id"] = client["client_id"]
    response = session.post(env["endpoints"]["token"], data=form, auth=auth)
    check(response.status_code == 200, f"code exchanged ({response.status_code} {response.text[:200]})")
    return response.json()


def verify_id_token(env, client, id_token, nonce=None, access_token=None):
    header = header_of(id_token)
    check(header.get("alg") == "RS256", f"ID token alg RS256 (header {header})")
    token = jwt.JWT(jwt=id_token, key=jwks_set(env), algs=["RS256"])
    claims = json.loads(token.claims)
    check(claims["iss"] == env["issuer"], f"iss {claims['iss']} is the issuer exactly")
    check(claims["aud"] == client["client_id"], "aud is the client_id")
    check(claims["exp"] > time.time(), "exp in the future")
    if nonce:
        check(claims.get("nonce") == nonce, "nonce came back")
    if access_token is not None:
        digest = hashlib.sha256(access_token.encode("ascii")).digest()
        check(claims.get("at_hash") == b64url(digest[:16]), "at_hash matches the access token")
    return header, claims


def main():
    env = json.load(open(sys.argv[1]))
    base = env["base_url"]
    endpoints = env["endpoints"]
    alice = env["users"]["alice"]

    # --- Discovery, and RFC 8414 as before.
    discovery = session.get(endpoints["openid_configuration"]).json()
    check(discovery["issuer"] == base, "discovery issuer is the bare origin")
    for name, key in [("jwks_uri", "jwks"), ("userinfo_endpoint", "userinfo"),
                      ("end_session_endpoint", "end_session"), ("authorization_endpoint", "authorize"),
                      ("token_endpoint", "token")]:
        check(discovery.get(name) == endpoints[key], f"discovery {name} = {endpoints[key]}")
    check("RS256" in discovery["id_token_signing_alg_values_supported"], "RS256 among the signing algs")
    print("  claims_supported:", sorted(discovery["claims_supported"]))
    metadata = session.get(endpoints["metadata"]).json()
    check(metadata["issuer"] == base, "RFC 8414 issuer unchanged")
    check(metadata["authorization_endpoint"] == endpoints["authorize"] and metadata["token_endpoint"] == endpoints["token"],
          "RFC 8414 endpoints unchanged")
    print("  RFC 8414 now also has:", "jwks_uri" in metadata and metadata["jwks_uri"], "scopes", metadata["scopes_supported"])

    # --- The code flow, both clients.
    for name in ("confidential", "public"):
        client = env["clients"][name]
        nonce = secrets.token_urlsafe(12)
        tokens = sign_in(env, client, nonce=nonce)
        check("id_token" in tokens, f"{name}: the token response has an id_token")
        header, claims = verify_id_token(env, client, tokens["id_token"], nonce, tokens["access_token"])
        check(claims.get("email") == alice["email"] and claims.get("name") == alice["name"], "email and name in the ID token")
        print(f"  {name}: ID token header {header}")
        print(f"  {name}: ID token claims {sorted(claims)}")
        userinfo = session.get(endpoints["userinfo"], headers={"Authorization": f"Bearer {tokens['access_token']}"})
        check(userinfo.status_code == 200 and userinfo.json()["sub"] == claims["sub"], "userinfo has the same sub")
        print(f"  {name}: userinfo {userinfo.json()}")
        me = session.get(endpoints["api_me"], headers={"Authorization": f"Bearer {tokens['access_token']}"})
        check(me.status_code == 200 and set(me.json()["scope"].split()) == {"openid", "profile", "email", "read"}, f"/api/me with the access token: {me.json()}")
        me = session.get(endpoints["api_me"], headers={"Authorization": f"Bearer {tokens['id_token']}"})
        check(me.status_code == 401, f"/api/me refuses the ID token as an access token ({me.headers.get('WWW-Authenticate')})")
        # Refresh.
        form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        auth = (client["client_id"], client["client_secret"]) if client["client_secret"] else None
        if auth is None:
            form["client_id"] = client["client_id"]
        refreshed = session.post(endpoints["token"], data=form, auth=auth).json()
        if "id_token" in refreshed:
            _, again = verify_id_token(env, client, refreshed["id_token"], access_token=refreshed["access_token"])
            check(again["sub"] == claims["sub"], "refresh: a new id_token, same sub")
            print(f"  {name}: refresh id_token claims {sorted(again)}; nonce {'kept' if 'nonce' in again else 'absent'};"
                  f" auth_time {'same' if again['auth_time'] == claims['auth_time'] else 'changed'}")
        else:
            print(f"  {name}: refresh gives no id_token")
    last_id_token = tokens["id_token"]

    # A request without openid: as before.
    plain = sign_in(env, env["clients"]["confidential"], scope="read")
    check("id_token" not in plain and plain["scope"] == "read", "no openid scope: no id_token")

    def logout(id_token, state, signed_in=True, post_logout=REDIRECT_URI):
        query = {"id_token_hint": id_token, "state": state}
        if post_logout:
            query["post_logout_redirect_uri"] = post_logout
        url = endpoints["end_session"] + "?" + urlencode(query)
        arguments = [env["browser"], "--logout", url]
        if signed_in:
            arguments += ["--username", alice["username"], "--password", alice["password"]]
        return subprocess.run(arguments, capture_output=True, text=True)

    # --- Rotation.
    before = kids(env)
    rotated = session.post(endpoints["test_rotate_signing_key"], data={"keep_old": "1"}).json()
    print("  rotate keep_old=1:", rotated)
    check(rotated["old_kid"] == before[0] and kids(env) == [rotated["kid"], before[0]], "keep_old=1: new key first, old still published")
    tokens = sign_in(env, env["clients"]["confidential"], nonce="n1")
    header, _ = verify_id_token(env, env["clients"]["confidential"], tokens["id_token"], "n1")
    check(header["kid"] == rotated["kid"], "new sign-in: ID token has the new kid")
    result = logout(last_id_token, "s0", signed_in=False)
    check(result.returncode == 0 and result.stdout.strip() == f"{REDIRECT_URI}?state=s0",
          f"keep_old=1: an ID token of the old key still works as id_token_hint ({result.stderr.strip()})")
    rotated = session.post(endpoints["test_rotate_signing_key"], data={}).json()
    print("  rotate keep_old=0:", rotated)
    check(kids(env) == [rotated["kid"]], "keep_old=0: only the new key published")
    kept_token = tokens["id_token"]  # signed by the key just removed
    tokens = sign_in(env, env["clients"]["confidential"], nonce="n2")
    header, _ = verify_id_token(env, env["clients"]["confidential"], tokens["id_token"], "n2")
    check(header["kid"] == rotated["kid"], "new sign-in: ID token has the newest kid")

    # --- RP-initiated logout.
    result = logout(tokens["id_token"], "s1")
    check(result.returncode == 0 and result.stdout.strip() == f"{REDIRECT_URI}?state=s1",
          f"logout (signed in, confirmed): redirected to {result.stdout.strip()} {result.stderr.strip()}")
    result = logout(tokens["id_token"], "s2", signed_in=False)
    check(result.returncode == 0 and result.stdout.strip() == f"{REDIRECT_URI}?state=s2",
          f"logout (no session, no prompt): redirected to {result.stdout.strip()} {result.stderr.strip()}")
    result = logout(tokens["id_token"], "s3", post_logout="http://127.0.0.1:5555/callback")
    check(result.returncode == 0 and result.stdout.strip() == "http://127.0.0.1:5555/callback?state=s3",
          f"logout to a loopback post-logout URI on another port: {result.stdout.strip()} {result.stderr.strip()}")
    result = logout(tokens["id_token"], "s4", post_logout="https://evil.example/")
    check(result.returncode == 1, f"logout to an unregistered URI refused: {result.stderr.strip()}")
    result = logout(kept_token, "s5")
    check(result.returncode == 1, f"logout with an ID token whose key is gone refused: {result.stderr.strip()}")
    result = logout(tokens["id_token"], "s6", post_logout=None)
    print(f"  logout without post_logout_redirect_uri: {result.returncode} {result.stdout.strip()} {result.stderr.strip()}")

    # --- RFC 7523.
    service = env["clients"]["service"]
    url = endpoints["test_jwt_client_token"]
    rsa_key = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-1")
    ec_key = jwk.JWK.generate(kty="EC", crv="P-256", kid="ec-1")
    ed_key = jwk.JWK.generate(kty="OKP", crv="Ed25519", kid="ed-1")
    for key in (rsa_key, ec_key, ed_key):
        answer = session.post(endpoints["test_client_keys"], json={"client_id": service["client_id"], "jwk": json.loads(key.export_public())})
        check(answer.status_code == 200, f"client key registered: {answer.json()}")

    def assertion(key, alg, kid=None, **overrides):
        now = int(time.time())
        claims = {"iss": service["client_id"], "sub": service["client_id"], "aud": url, "iat": now,
                  "exp": now + 120, "jti": str(uuid.uuid4())}
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        header = {"alg": alg, "typ": "JWT"}
        if kid:
            header["kid"] = kid
        token = jwt.JWT(header=header, claims=claims)
        token.make_signed_token(key)
        return token.serialize()

    def present(token, grant=False):
        if grant:
            data = {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": token}
        else:
            data = {"grant_type": "client_credentials", "client_assertion": token,
                    "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}
        return session.post(url, data=data)

    secret_key = jwk.JWK(kty="oct", k=b64url(service["client_secret"].encode()))
    for key, alg, kid in [(rsa_key, "RS256", "rsa-1"), (rsa_key, "PS256", None), (ec_key, "ES256", "ec-1"),
                          (ed_key, "EdDSA", "ed-1"), (secret_key, "HS256", None)]:
        answer = present(assertion(key, alg, kid))
        check(answer.status_code == 200 and answer.json()["token_type"] == "Bearer", f"{alg} accepted: {answer.json()}")
    replayed = assertion(rsa_key, "RS256", "rsa-1")
    present(replayed)
    for token, what in [
        (replayed, "replayed jti"),
        (assertion(rsa_key, "RS256", "rsa-1", aud="http://127.0.0.1:1/elsewhere"), "wrong aud"),
        (assertion(rsa_key, "RS256", "rsa-1", iat=int(time.time()) - 600, exp=int(time.time()) - 60), "expired"),
        (assertion(rsa_key, "RS256", "rsa-1", exp=int(time.time()) + 3600), "exp too far"),
        (assertion(rsa_key, "RS256", "rsa-1", jti=None), "no jti"),
        (assertion(rsa_key, "RS256", "rsa-1", sub="someone-else"), "sub != iss"),
        (assertion(jwk.JWK.generate(kty="RSA", size=2048), "RS256", "rsa-1"), "wrong key"),
        (assertion(jwk.JWK(kty="oct", k=b64url(b"not the secret, but long enough for HS256")), "HS256"), "wrong secret"),
    ]:
        answer = present(token)
        check(answer.status_code == 401 and answer.json()["error"] == "invalid_client", f"{what} refused: {answer.json()}")
    unsigned = ".".join([b64url(json.dumps({"alg": "none"}).encode()),
                         b64url(json.dumps({"iss": service["client_id"], "sub": service["client_id"], "aud": url,
                                            "exp": int(time.time()) + 60, "iat": int(time.time()), "jti": "x"}).encode()), ""])
    answer = present(unsigned)
    check(answer.status_code == 401, f"alg none refused: {answer.json()}")
    answer = present(assertion(rsa_key, "RS256", "rsa-1", sub="alice"), grant=True)
    check(answer.status_code == 200, f"JWT-bearer grant for alice accepted: {answer.json()}")
    answer = present(assertion(rsa_key, "RS256", "rsa-1", sub="nobody"), grant=True)
    check(answer.status_code == 400 and answer.json()["error"] == "invalid_grant", f"grant for an unknown user refused: {answer.json()}")
    log = session.get(url).json()["assertions"]
    check(all("assertion" not in entry for entry in log) and len(log) >= 15, f"the log has {len(log)} entries")
    for entry in log:
        print("  ", entry)
    print("all checks passed")


if __name__ == "__main__":
    main()
