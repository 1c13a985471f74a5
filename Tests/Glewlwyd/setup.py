"""Configures a freshly started glewlwyd through its admin REST API and writes env.json.

    setup.py RUN_DIR
    setup.py RUN_DIR --backchannel-logout-uri URI


Run by scripts/glewlwyd.sh start once the server answers. RUN_DIR holds
glewlwyd.conf, `port`, the keys that script made (keys/) and, when the TLS front
runs, `tls-port` and the certificates (tls/). It logs in as the admin that the
package's database script creates (admin / password), then creates:

- a scope `api` (password required) and the user alice with a random password;
- the clients (see CLIENTS below and Tests/Glewlwyd/README.md);
- four instances of the OpenID Connect plugin: `oidc` (DPoP allowed, PAR
  allowed, JAR, refresh-token rotation, device flow, mTLS through the front),
  `oidcnonce` (the same, DPoP server nonces mandatory), `oidcpar` (the same,
  PAR required), `oidcshort` (the same as `oidc`, 5-second access tokens) and
  `oidclogout` (session management and Back-Channel Logout).

The second form, for a test's loopback route, points the client `logout`'s
`backchannel_logout_uri` at URI (env.json's `set_backchannel_logout_uri` command).

and writes RUN_DIR/env.json (mode 600: it holds the run's secrets).
"""

import base64
import json
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from http.cookiejar import CookieJar

ADMIN = ("admin", "password")  # made by the package's init.sqlite3.sql
USER = "alice"
SCOPES = ["openid", "api"]
REDIRECTS = ["http://127.0.0.1/callback", "http://127.0.0.1:8976/callback"]
# Where glewlwyd POSTs the "logout" client's logout tokens until a test points
# it at its own listener (setup.py RUN_DIR --backchannel-logout-uri URI).
BACKCHANNEL_LOGOUT_URI = "http://127.0.0.1:8977/backchannel-logout"
PAR_PREFIX = "urn:ietf:params:oauth:request_uri:"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def ec_public_jwk(pem_path, kid, use="sig"):
    """The public JWK (P-256) of a PEM private key, through openssl (no Python crypto needed)."""
    der = subprocess.run(
        ["openssl", "ec", "-in", pem_path, "-pubout", "-outform", "DER"],
        check=True, capture_output=True,
    ).stdout
    point = der[-65:]  # SubjectPublicKeyInfo of P-256 ends with 04 || X || Y
    if point[0] != 4:
        raise SystemExit(f"setup: {pem_path} is not an uncompressed P-256 key")
    return {"kty": "EC", "crv": "P-256", "x": b64url(point[1:33]), "y": b64url(point[33:65]),
            "kid": kid, "alg": "ES256", "use": use}


def cert_jwk(cert_path, kid):
    """The public JWK of a certificate's P-256 key with the certificate in x5c (self-signed mTLS)."""
    pub = subprocess.run(["openssl", "x509", "-in", cert_path, "-pubkey", "-noout"],
                         check=True, capture_output=True).stdout
    der = subprocess.run(["openssl", "ec", "-pubin", "-outform", "DER"], input=pub,
                         check=True, capture_output=True).stdout
    point = der[-65:]
    cert_der = subprocess.run(["openssl", "x509", "-in", cert_path, "-outform", "DER"],
                              check=True, capture_output=True).stdout
    return {"kty": "EC", "crv": "P-256", "x": b64url(point[1:33]), "y": b64url(point[33:65]),
            "kid": kid, "alg": "ES256", "use": "sig", "x5c": [base64.b64encode(cert_der).decode()]}


class Admin:
    def __init__(self, api):
        self.api = api
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(CookieJar()))

    def call(self, method, path, body=None, expect=(200,)):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.api + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with self.opener.open(request, timeout=30) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        if status not in expect:
            raise SystemExit(f"setup: {method} {path} answered {status}: {text[:800]}")
        return json.loads(text) if text.strip().startswith(("{", "[")) else text


def plugin_parameters(name, issuer, keys, overrides):
    parameters = {
        "iss": issuer,
        "jwt-type": "ecdsa",
        "jwt-key-size": "256",
        "key": open(os.path.join(keys, "signing.key")).read(),
        "cert": open(os.path.join(keys, "signing.pub")).read(),
        "access-token-duration": 3600,
        "refresh-token-duration": 1209600,
        "code-duration": 600,
        "refresh-token-rolling": True,
        "refresh-token-one-use": "always",
        "allow-non-oidc": True,
        "auth-type-code-enabled": True,
        "auth-type-token-enabled": False,
        "auth-type-id-token-enabled": True,
        "auth-type-none-enabled": False,
        "auth-type-password-enabled": True,
        "auth-type-client-enabled": True,
        "auth-type-refresh-enabled": True,
        "auth-type-device-enabled": True,
        "auth-type-code-revoke-replayed": True,
        "device-authorization-expiration": 600,
        "device-authorization-interval": 1,
        "subject-type": "public",
        "scope": [],
        "allowed-scope": SCOPES,
        "jwks-show": True,
        "pkce-allowed": True,
        "pkce-method-plain-allowed": False,
        "introspection-revocation-allowed": True,
        "introspection-revocation-allow-target-client": True,
        "request-parameter-allow": True,
        "request-parameter-allow-encrypted": False,
        "request-uri-allow-https-non-secure": False,
        "request-maximum-exp": 3600,
        "client-pubkey-parameter": "",
        "client-jwks-parameter": "jwks",
        "client-jwks_uri-parameter": "",
        "client-refresh-token-one-use-parameter": "",
        "oauth-as-iss-id": True,
        "oauth-dpop-allowed": True,
        "oauth-dpop-iat-duration": 60,
        "oauth-dpop-iat-gap-duration": 10,
        "oauth-dpop-dpop_bound_access_tokens-property": "dpop_bound_access_tokens",
        "oauth-par-allowed": True,
        "oauth-par-required": False,
        "oauth-par-request_uri-prefix": PAR_PREFIX,
        "oauth-par-duration": 90,
        "session-management-allowed": False,
        "register-client-allowed": False,
        "claims": [],
        "name-claim": "on-demand",
        "email-claim": "no",
        "scope-claim": "no",
        "address-claim": {"type": "no"},
    }
    if os.path.exists(os.path.join(os.path.dirname(keys), "tls-port")):
        parameters.update({
            # The TLS front (front.py) checks the client certificate against
            # the run's CA (or the registered self-signed one) and forwards it
            # in this header; glewlwyd is reachable on 127.0.0.1 only.
            "client-cert-source": "header",
            "client-cert-header-name": "X-Client-Cert",
            "client-cert-use-endpoint-aliases": True,
            "client-cert-self-signed-allowed": True,
        })
    parameters.update(overrides)
    return {"module": "oidc", "name": name, "display_name": name, "parameters": parameters}


def set_backchannel_logout_uri(run_dir, uri):
    """Points the client `logout` at a test's listener (its port is known only then)."""
    port = open(os.path.join(run_dir, "port")).read().strip()
    admin = Admin(f"http://127.0.0.1:{port}/api")
    admin.call("POST", "/auth/", {"username": ADMIN[0], "password": ADMIN[1]})
    client = admin.call("GET", "/client/logout")
    client["backchannel_logout_uri"] = uri
    admin.call("PUT", "/client/logout", {key: value for key, value in client.items() if key != "source"})


def main():
    run_dir = os.path.abspath(sys.argv[1])
    if len(sys.argv) == 4 and sys.argv[2] == "--backchannel-logout-uri":
        return set_backchannel_logout_uri(run_dir, sys.argv[3])
    port = open(os.path.join(run_dir, "port")).read().strip()
    # The admin API is called directly; what clients see is the external URL
    # (the TLS front's with --tls).
    api = f"http://127.0.0.1:{port}/api"
    base = open(os.path.join(run_dir, "external-url")).read().strip()
    keys = os.path.join(run_dir, "keys")
    tls_port_file = os.path.join(run_dir, "tls-port")
    tls_port = open(tls_port_file).read().strip() if os.path.exists(tls_port_file) else None

    admin = Admin(api)
    admin.call("POST", "/auth/", {"username": ADMIN[0], "password": ADMIN[1]})

    admin.call("POST", "/scope/", {
        "name": "api", "display_name": "API", "description": "The test resource server's API",
        "password_required": True, "password_max_age": 0, "scheme": {},
    })

    # The database client backend keeps only the properties its data-format
    # lists: add the one that makes a client's tokens DPoP-only.
    backend = admin.call("GET", "/mod/client/database")
    backend["parameters"]["data-format"]["dpop_bound_access_tokens"] = {"multiple": False, "read": True, "write": True}
    # and the two that make glewlwyd send a client back-channel logout tokens.
    for name in ("backchannel_logout_uri", "backchannel_logout_session_required"):
        backend["parameters"]["data-format"][name] = {"multiple": False, "read": True, "write": True}
    admin.call("PUT", "/mod/client/database", {key: backend[key] for key in
                                                ("display_name", "parameters", "order_rank", "readonly")
                                                if key in backend})
    admin.call("PUT", "/mod/client/database/reset")  # the running instance reads its parameters again

    password = secrets.token_urlsafe(18)
    admin.call("POST", "/user/", {
        "username": USER, "name": "Alice", "email": "alice@example.com", "password": password,
        "scope": SCOPES + ["g_profile"], "enabled": True,
    })

    jwt_jwk = ec_public_jwk(os.path.join(keys, "client-jwt.key"), "client-jwt-1")
    code_grants = ["code", "refresh_token", "device_authorization", "delete_token"]
    clients = {
        # A public client (a CLI): PKCE, no secret; refresh tokens bound to the DPoP key.
        "public": {
            "client_id": "public", "name": "public CLI", "confidential": False,
            "authorization_type": code_grants, "redirect_uri": REDIRECTS, "scope": SCOPES,
            "token_endpoint_auth_method": ["none"], "enabled": True,
        },
        # A confidential client with a secret, every grant.
        "confidential": {
            "client_id": "confidential", "name": "confidential web app", "confidential": True,
            "client_secret": secrets.token_urlsafe(24),
            "authorization_type": code_grants + ["client_credentials", "password"],
            "redirect_uri": REDIRECTS, "scope": SCOPES,
            "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"], "enabled": True,
        },
        # private_key_jwt (RFC 7523) and signed request objects (JAR) with one ES256 key.
        "jwt": {
            "client_id": "jwt", "name": "private_key_jwt client", "confidential": True,
            "authorization_type": code_grants + ["client_credentials"],
            "redirect_uri": REDIRECTS, "scope": SCOPES,
            "token_endpoint_auth_method": ["private_key_jwt"],
            "jwks": {"keys": [jwt_jwk]},
            "request_object_signing_alg": "ES256", "token_endpoint_signing_alg": "ES256",
            "enabled": True,
        },
        # A confidential client whose every token must be DPoP-bound.
        "dpop-bound": {
            "client_id": "dpop-bound", "name": "DPoP-only client", "confidential": True,
            "client_secret": secrets.token_urlsafe(24),
            "authorization_type": code_grants + ["client_credentials"],
            "redirect_uri": REDIRECTS, "scope": SCOPES,
            "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"],
            "dpop_bound_access_tokens": "1", "enabled": True,
        },
        # A confidential client told of logouts on a loopback route (Back-Channel
        # Logout): the Swift test listens on BACKCHANNEL_LOGOUT_URI. glewlwyd puts
        # sid in the logout token only with backchannel_logout_session_required.
        "logout": {
            "client_id": "logout", "name": "back-channel logout client", "confidential": True,
            "client_secret": secrets.token_urlsafe(24),
            "authorization_type": code_grants, "redirect_uri": REDIRECTS, "scope": SCOPES,
            "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"],
            "backchannel_logout_uri": BACKCHANNEL_LOGOUT_URI,
            "backchannel_logout_session_required": "1", "enabled": True,
        },
    }
    if tls_port:
        tls = os.path.join(run_dir, "tls")
        clients["mtls"] = {
            "client_id": "mtls", "name": "tls_client_auth client", "confidential": True,
            "authorization_type": code_grants + ["client_credentials"],
            "redirect_uri": REDIRECTS, "scope": SCOPES,
            "token_endpoint_auth_method": ["tls_client_auth"],
            "tls_client_auth_san_dns": "mtls-client.test", "enabled": True,
        }
        clients["mtls-self"] = {
            "client_id": "mtls-self", "name": "self_signed_tls_client_auth client", "confidential": True,
            "authorization_type": code_grants + ["client_credentials"],
            "redirect_uri": REDIRECTS, "scope": SCOPES,
            "token_endpoint_auth_method": ["self_signed_tls_client_auth"],
            "jwks": {"keys": [cert_jwk(os.path.join(tls, "self-client.crt"), "self-1")]},
            "enabled": True,
        }
    for body in clients.values():
        admin.call("POST", "/client/", body)

    plugins = {"oidc": {}, "oidcnonce": {"oauth-dpop-nonce-mandatory": True, "oauth-dpop-nonce-counter": 1000},
               "oidcpar": {"oauth-par-required": True},
               # 5-second access tokens: the 401 -> refresh -> retry rules against a
               # real expiry. (Used for the first half of their life, 2.5 s: with 2 s,
               # a CLI process that a busy machine started a second after the others
               # refreshed again, rightly, and the one-refresh-per-burst test failed.)
               "oidcshort": {"access-token-duration": 5},
               # Back-Channel Logout (glewlwyd implements draft 06): session
               # management gives ID tokens a sid and registers end_session and
               # DELETE session/<sid>; ending a session POSTs a logout token to
               # each client of that session with a backchannel_logout_uri.
               "oidclogout": {"session-management-allowed": True, "session-cookie-name": "GLEWLWYD_OIDC_SID",
                              "session-cookie-expiration": 3600, "back-channel-logout-allowed": True}}
    endpoints = {}
    for name, overrides in plugins.items():
        plugin_base = f"{base}/api/{name}"
        admin.call("POST", "/mod/plugin/", plugin_parameters(name, plugin_base, keys, overrides))
        endpoints[name] = {
            "issuer": plugin_base,
            "discovery": f"{plugin_base}/.well-known/openid-configuration",
            "authorize": f"{plugin_base}/auth",
            "token": f"{plugin_base}/token",
            "revocation": f"{plugin_base}/revoke",
            "introspection": f"{plugin_base}/introspect",
            "par": f"{plugin_base}/par",
            "device": f"{plugin_base}/device_authorization",
            "userinfo": f"{plugin_base}/userinfo",
            "jwks": f"{plugin_base}/jwks",
            "end_session": f"{plugin_base}/end_session",
        }
        if tls_port:
            # With client-cert-use-endpoint-aliases, the certificate is read on these only.
            endpoints[name]["mtls_aliases"] = {
                "token": f"{plugin_base}/mtls/token", "par": f"{plugin_base}/mtls/par",
                "revocation": f"{plugin_base}/mtls/revoke",
                "introspection": f"{plugin_base}/mtls/introspect",
                "device": f"{plugin_base}/mtls/device_authorization",
            }

    clients_env = {}
    for client_id, body in clients.items():
        entry = {
            "client_id": client_id,
            "type": "confidential" if body["confidential"] else "public",
            "token_endpoint_auth_method": body["token_endpoint_auth_method"],
            "grants": body["authorization_type"],
            "redirect_uris": REDIRECTS,
        }
        if "client_secret" in body:
            entry["client_secret"] = body["client_secret"]
        if client_id == "jwt":
            entry.update({"private_key": os.path.join(keys, "client-jwt.key"), "kid": jwt_jwk["kid"],
                          "alg": "ES256", "public_jwk": jwt_jwk})
        if client_id == "dpop-bound":
            entry["dpop_required"] = True
        if client_id == "logout":
            entry["backchannel_logout_uri"] = BACKCHANNEL_LOGOUT_URI
        if client_id == "mtls":
            entry.update({"certificate": os.path.join(run_dir, "tls", "client.crt"),
                          "key": os.path.join(run_dir, "tls", "client.key"),
                          "san_dns": "mtls-client.test"})
        if client_id == "mtls-self":
            entry.update({"certificate": os.path.join(run_dir, "tls", "self-client.crt"),
                          "key": os.path.join(run_dir, "tls", "self-client.key")})
        clients_env[client_id] = entry

    here = os.path.dirname(os.path.abspath(__file__))
    repo_root = os.path.dirname(os.path.dirname(here))
    env = {
        "implementation": "glewlwyd 2.7.5 (Debian 12)",
        "base_url": base,
        "api": f"{base}/api",
        "issuer": endpoints["oidc"]["issuer"],
        "endpoints": endpoints["oidc"],
        "plugins": endpoints,
        "scopes": SCOPES,
        "user": {"username": USER, "password": password},
        "clients": clients_env,
        "redirect_uris": REDIRECTS,
        "loopback_any_port": False,
        "browser": [os.path.join(repo_root, ".build", "glewlwyd", "venv", "bin", "python"),
                    os.path.join(here, "browser.py")],
        "log": os.path.join(run_dir, "glewlwyd.log"),
        # Append a URI: the client `logout`'s backchannel_logout_uri becomes it.
        "set_backchannel_logout_uri": [os.path.join(repo_root, ".build", "glewlwyd", "venv", "bin", "python"),
                                       os.path.abspath(__file__), run_dir, "--backchannel-logout-uri"],
    }
    if tls_port:
        tls = os.path.join(run_dir, "tls")
        env["browser"] += ["--ca", os.path.join(tls, "ca.crt")]
        env["tls"] = {
            "base_url": base,
            "ca": os.path.join(tls, "ca.crt"),
            "client_certificate": os.path.join(tls, "client.crt"),
            "client_key": os.path.join(tls, "client.key"),
            "other_client_certificate": os.path.join(tls, "other.crt"),
            "other_client_key": os.path.join(tls, "other.key"),
            "self_signed_certificate": os.path.join(tls, "self-client.crt"),
            "self_signed_key": os.path.join(tls, "self-client.key"),
        }
    resource_file = os.path.join(run_dir, "resource-port")
    if os.path.exists(resource_file):
        resource = f"{base}/resource" if tls_port else f"http://127.0.0.1:{open(resource_file).read().strip()}"
        env["resource"] = {
            "base_url": resource,
            "me": f"{resource}/api/me",
            "nonce_me": f"{resource}/api/nonce/me",
            "nonce_loop": f"{resource}/api/nonce/loop",
            "bearer_me": f"{resource}/api/bearer/me",
            "redirect": f"{resource}/api/redirect?to=/api/me",
            "requests": f"{resource}/test/requests",
            "downgrade_token": f"{resource}/downgrade/token",
        }
        if tls_port:
            env["resource"]["mtls_me"] = f"{resource}/api/mtls/me"
    path = os.path.join(run_dir, "env.json")
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(env, out, indent=2)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
