"""Checks a running provider's self-configuring side with raw HTTP, not with our Swift library.

    selftest.py ENV_JSON

Run through `scripts/provider-selftest.sh [--name NAME]` (the venv's Python).
What issue 38's Swift tests build on: RFC 8414 metadata advertising
registration, client ID metadata documents and S256; RFC 9728 metadata and
`resource_metadata` challenges of the resources; RFC 7591 registration and
RFC 7592 read/update/delete; sign-ins with RFC 8707 `resource` and tokens
refused by the other resource; step-up scope; a client ID metadata document
served here over https on 127.0.0.1 with throwaway CAs (trusted through the CA
file, through /test/cimd-trust, and not at all); the hostile resources and
servers as README.md describes them. It signs alice in: run it against a
provider no test relies on the sign-in times of (RFC 9470's fresh-auth).

Each check prints one line, `ok   NAME: what was seen` or `FAIL NAME: ...`, and
the last line is `N passed, N failed`. Exit status 1 when a check failed.
"""

import base64
import datetime
import hashlib
import http.server
import ipaddress
import json
import os
import secrets
import ssl
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import Browser  # noqa: E402  (this folder's scripted browser)

ENV = json.load(open(sys.argv[1]))
BASE = ENV["base_url"]
ENDPOINTS = ENV["endpoints"]
ALICE = ENV["users"]["alice"]
REDIRECT_URI = "http://127.0.0.1:8976/callback"
SESSION = requests.Session()
SESSION.trust_env = False  # everything is on 127.0.0.1: never a proxy
TIMEOUT = 30
RESULTS = []


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


def get(url, **kwargs):
    return SESSION.get(url, timeout=TIMEOUT, allow_redirects=False, **kwargs)


def bearer(url, token):
    return get(url, headers={"Authorization": f"Bearer {token}"})


def challenge(response):
    """The auth-params of a WWW-Authenticate: Bearer header (DOT's quoted form)."""
    header = response.headers.get("WWW-Authenticate", "")
    expect(header.startswith("Bearer"), f"no Bearer challenge: {header!r}")
    params = {}
    rest = header[len("Bearer") :].strip()
    while rest:
        name, _, rest = rest.partition("=")
        expect(rest.startswith('"'), f"unquoted value in {header!r}")
        value, index = [], 1
        while rest[index] != '"':
            if rest[index] == "\\":
                index += 1
            value.append(rest[index])
            index += 1
        params[name.strip().lstrip(",").strip()] = "".join(value)
        rest = rest[index + 1 :].lstrip(", ")
    return params


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def register(**metadata):
    body = {"redirect_uris": [REDIRECT_URI], "grant_types": ["authorization_code", "refresh_token"]} | metadata
    response = SESSION.post(ENDPOINTS["registration"], json=body, timeout=TIMEOUT)
    expect(response.status_code == 201, f"registration HTTP {response.status_code}: {response.text[:300]}")
    return response.json()


def sign_in(client_id, scope="read", resource=None, client_secret=None, token_resource=None):
    """The code flow with PKCE through the scripted browser; returns the token response."""
    verifier = secrets.token_urlsafe(48)
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "scope": scope,
        "state": secrets.token_urlsafe(8),
        "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()),
        "code_challenge_method": "S256",
    }
    if resource:
        query["resource"] = resource
    location = Browser(ALICE["username"], ALICE["password"], deny=False).authorize(
        f"{ENDPOINTS['authorize']}?{urlencode(query)}"
    )
    returned = parse_qs(urlsplit(location).query)
    expect("code" in returned, f"no code in the redirect: {location[:300]}")
    form = {
        "grant_type": "authorization_code",
        "code": returned["code"][0],
        "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier,
        "client_id": client_id,
    }
    if token_resource or resource:
        form["resource"] = token_resource or resource
    auth = (client_id, client_secret) if client_secret else None
    response = SESSION.post(ENDPOINTS["token"], data=form, auth=auth, timeout=TIMEOUT)
    expect(response.status_code == 200, f"token HTTP {response.status_code}: {response.text[:300]}")
    return response.json()


RES_A = ENV["resources"]["a"]
RES_B = ENV["resources"]["b"]
QUIET = ENV["resources"]["quiet"]
HOSTILE = ENV["hostile"]


@check("metadata: RFC 8414 advertises registration, client ID metadata documents, S256")
def _():
    metadata = get(ENDPOINTS["metadata"]).json()
    expect(metadata["issuer"] == ENV["issuer"], f"issuer {metadata['issuer']}")
    expect(metadata.get("registration_endpoint") == ENDPOINTS["registration"], f"{metadata.get('registration_endpoint')}")
    expect(metadata.get("client_id_metadata_document_supported") is True, "client_id_metadata_document_supported")
    expect(metadata.get("code_challenge_methods_supported") == ["S256"], f"{metadata.get('code_challenge_methods_supported')}")
    return f"registration_endpoint {metadata['registration_endpoint']}, code_challenge_methods_supported ['S256']"


@check("metadata: RFC 9728 documents of the resources")
def _():
    seen = []
    for name, entry in ENV["resources"].items():
        document = get(entry["metadata"]).json()
        expect(document["resource"] == entry["resource"], f"{name}: resource {document['resource']}")
        expect(document["authorization_servers"] == [ENV["issuer"]], f"{name}: {document['authorization_servers']}")
        expect(document["scopes_supported"] == ["read", "write"], f"{name}: {document['scopes_supported']}")
        seen.append(document["resource"].removeprefix(BASE))
    root = get(ENDPOINTS["resource_metadata"]).json()
    expect(root["resource"] == BASE, f"root resource {root['resource']}")
    unknown = get(f"{BASE}/.well-known/oauth-protected-resource/api/me")
    expect(unknown.status_code == 404, f"a path-form document for an unknown resource: HTTP {unknown.status_code}")
    unknown_server = get(f"{BASE}/.well-known/oauth-authorization-server/anything")
    expect(unknown_server.status_code == 404, f"a path-form server document: HTTP {unknown_server.status_code}")
    return f"resources {seen} and root {BASE}; unknown path forms 404"


@check("resources: 401 challenges with resource_metadata (none for quiet)")
def _():
    for name, entry in ENV["resources"].items():
        response = get(entry["hello"])
        expect(response.status_code == 401, f"{name}: HTTP {response.status_code}")
        params = challenge(response)
        expect("error" not in params, f"{name}: an error without credentials: {params}")
        expect(params.get("scope") == "read", f"{name}: scope {params.get('scope')}")
        if entry["challenge_names_metadata"]:
            expect(params.get("resource_metadata") == entry["metadata"], f"{name}: {params}")
        else:
            expect("resource_metadata" not in params, f"{name}: {params}")
    return f"a, b name their documents; quiet does not: {challenge(get(QUIET['hello']))}"


@check("registration: RFC 7591 register, RFC 7592 read, update (token rotated), delete")
def _():
    registration = register(client_name="selftest", token_endpoint_auth_method="none")
    client_id = registration["client_id"]
    token = registration["registration_access_token"]
    uri = registration["registration_client_uri"]
    expect(uri == f"{ENDPOINTS['registration']}{client_id}/", f"registration_client_uri {uri}")
    expect("client_secret" not in registration, "a public client got a secret")
    read = bearer(uri, token)
    expect(read.status_code == 200 and read.json()["client_id"] == client_id, f"read HTTP {read.status_code}")
    body = {"client_id": client_id, "redirect_uris": [REDIRECT_URI], "client_name": "renamed",
            "token_endpoint_auth_method": "none"}
    updated = SESSION.put(uri, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    expect(updated.status_code == 200 and updated.json()["client_name"] == "renamed", f"update HTTP {updated.status_code}")
    new_token = updated.json()["registration_access_token"]
    expect(new_token != token, "the registration access token was not rotated")
    stale = bearer(uri, token)
    expect(stale.status_code == 401, f"the old token after update: HTTP {stale.status_code}")
    deleted = SESSION.delete(uri, headers={"Authorization": f"Bearer {new_token}"}, timeout=TIMEOUT)
    expect(deleted.status_code == 204, f"delete HTTP {deleted.status_code}")
    gone = bearer(uri, new_token)
    expect(gone.status_code == 401, f"read after delete: HTTP {gone.status_code}")
    confidential = register(client_name="selftest-confidential")
    expect(confidential.get("client_secret") and confidential["token_endpoint_auth_method"] == "client_secret_basic",
           f"{sorted(confidential)}")
    return "public client: 201, read 200, update 200 with a new token (old 401), delete 204 (read 401); " \
           "confidential client: a client_secret"


@check("registration: a registered public client signs in; /test/forget-client forgets it")
def _():
    registration = register(token_endpoint_auth_method="none")
    tokens = sign_in(registration["client_id"], resource=RES_A["resource"])
    hello = bearer(RES_A["hello"], tokens["access_token"])
    expect(hello.status_code == 200, f"hello HTTP {hello.status_code}")
    forget = SESSION.post(ENDPOINTS["test_forget_client"], data={"client_id": registration["client_id"]}, timeout=TIMEOUT)
    expect(forget.status_code == 200 and forget.json() == {"deleted": 1}, f"forget HTTP {forget.status_code}")
    read = bearer(registration["registration_client_uri"], registration["registration_access_token"])
    refresh = SESSION.post(ENDPOINTS["token"], data={"grant_type": "refresh_token", "client_id": registration["client_id"],
                                                     "refresh_token": tokens["refresh_token"]}, timeout=TIMEOUT)
    expect(read.status_code == 401, f"read after forget: HTTP {read.status_code}")
    expect(refresh.status_code in (400, 401) and refresh.json()["error"] == "invalid_client", f"{refresh.text[:200]}")
    return f"then registration read 401, refresh {refresh.status_code} {refresh.json()['error']}"


@check("RFC 8707: a token for resource a works at a, is refused by b; without resource refused by both")
def _():
    registration = register(token_endpoint_auth_method="none")
    client_id = registration["client_id"]
    tokens = sign_in(client_id, resource=RES_A["resource"])
    at_a = bearer(RES_A["hello"], tokens["access_token"])
    at_b = bearer(RES_B["hello"], tokens["access_token"])
    expect(at_a.status_code == 200, f"at a: HTTP {at_a.status_code}")
    answer = at_a.json()
    expect(answer["resource"] == RES_A["resource"] and answer["audience"] == [RES_A["resource"]]
           and answer["username"] == "alice" and answer["client_id"] == client_id, f"{answer}")
    expect(at_b.status_code == 401 and challenge(at_b).get("error") == "invalid_token", f"at b: HTTP {at_b.status_code}")
    expect(challenge(at_b).get("resource_metadata") == RES_B["metadata"], f"{challenge(at_b)}")
    refreshed = SESSION.post(ENDPOINTS["token"], data={"grant_type": "refresh_token", "client_id": client_id,
                                                       "refresh_token": tokens["refresh_token"],
                                                       "resource": RES_A["resource"]}, timeout=TIMEOUT)
    expect(refreshed.status_code == 200, f"refresh HTTP {refreshed.status_code}: {refreshed.text[:200]}")
    expect(bearer(RES_A["hello"], refreshed.json()["access_token"]).status_code == 200, "refreshed token at a")
    log = get(ENDPOINTS["test_token_requests"], params={"client_id": client_id}).json()["requests"]
    expect([entry["resource"] for entry in log] == [[RES_A["resource"]]] * 2, f"token log {log}")
    expect(tokens.get("sub") == "1" and refreshed.json().get("sub") == "1",
           f"sub {tokens.get('sub')!r}, after refresh {refreshed.json().get('sub')!r}")
    unbound = sign_in(client_id)
    expect("sub" not in unbound, f"a token response without resource has sub {unbound.get('sub')!r}")
    refused = [bearer(entry["hello"], unbound["access_token"]) for entry in (RES_A, RES_B)]
    expect(all(response.status_code == 401 for response in refused), f"{[r.status_code for r in refused]}")
    api = bearer(ENDPOINTS["api_me"], unbound["access_token"])
    expect(api.status_code == 200, f"/api/me with the unbound token: HTTP {api.status_code}")
    return f"a 200 {answer['audience']}, b 401 {challenge(at_b)['error_description']!r}; refresh keeps a; " \
           "/test/token-requests shows resource; token responses with sub '1' (alice); " \
           "a token without resource (no sub): a 401, b 401, /api/me 200"


@check("introspection: a resource server elsewhere checks a token with the service client's credentials")
def _():
    client_id = register(token_endpoint_auth_method="none")["client_id"]
    elsewhere = "http://127.0.0.1:9/mcp"
    tokens = sign_in(client_id, resource=elsewhere)
    service = ENV["clients"]["service"]
    answer = SESSION.post(ENDPOINTS["introspect"], data={"token": tokens["access_token"]},
                          auth=(service["client_id"], service["client_secret"]), timeout=TIMEOUT)
    expect(answer.status_code == 200, f"HTTP {answer.status_code}")
    body = answer.json()
    expect(body.get("active") is True and body.get("aud") == [elsewhere] and body.get("username") == "alice"
           and body.get("client_id") == client_id, f"{body}")
    anonymous = SESSION.post(ENDPOINTS["introspect"], data={"token": tokens["access_token"]}, timeout=TIMEOUT)
    expect(anonymous.status_code in (401, 403), f"without credentials: HTTP {anonymous.status_code}")
    return f"active, aud {body['aud']}, scope {body['scope']!r}; without credentials HTTP {anonymous.status_code}"


@check("step-up: admin 403 insufficient_scope scope=admin, then 200 with read admin; insufficient-always 403")
def _():
    client_id = register(token_endpoint_auth_method="none")["client_id"]
    first = sign_in(client_id, resource=RES_A["resource"])
    denied = bearer(RES_A["admin"], first["access_token"])
    params = challenge(denied)
    expect(denied.status_code == 403 and params.get("error") == "insufficient_scope" and params.get("scope") == "admin"
           and params.get("resource_metadata") == RES_A["metadata"], f"HTTP {denied.status_code} {params}")
    stepped = sign_in(client_id, scope="read admin", resource=RES_A["resource"])
    expect(bearer(RES_A["admin"], stepped["access_token"]).status_code == 200, "admin with admin scope")
    expect(bearer(RES_A["hello"], stepped["access_token"]).status_code == 200, "hello with read admin")
    always = bearer(RES_A["insufficient_always"], stepped["access_token"])
    expect(always.status_code == 403 and challenge(always).get("scope") == "admin", f"HTTP {always.status_code}")
    fresh = bearer(RES_A["fresh_auth"], stepped["access_token"])
    stale = bearer(RES_A["fresh_auth"] + "?max_age=0", stepped["access_token"])
    stale_params = challenge(stale)
    expect(fresh.status_code == 200, f"fresh-auth right after sign-in: HTTP {fresh.status_code}")
    expect(stale.status_code == 401 and stale_params.get("error") == "insufficient_user_authentication"
           and stale_params.get("max_age") == "0", f"HTTP {stale.status_code} {stale_params}")
    return f"403 {params}; insufficient-always 403 with admin; fresh-auth 200, max_age=0: 401 {stale_params['error']}"


@check("RFC 9470: fresh-auth counts from the token's sign-in: a refresh keeps it, a new sign-in renews it")
def _():
    client_id = register(token_endpoint_auth_method="none")["client_id"]
    first = sign_in(client_id, resource=RES_A["resource"])
    time.sleep(4)
    refreshed = SESSION.post(ENDPOINTS["token"], data={"grant_type": "refresh_token", "client_id": client_id,
                                                       "refresh_token": first["refresh_token"]}, timeout=TIMEOUT).json()
    again = sign_in(client_id, resource=RES_A["resource"])
    url = RES_A["fresh_auth"] + "?max_age=3"
    stale = bearer(url, refreshed["access_token"])
    fresh = bearer(url, again["access_token"])
    old = bearer(url, first["access_token"])
    expect(stale.status_code == 401 and challenge(stale).get("max_age") == "3", f"refreshed: HTTP {stale.status_code}")
    expect(old.status_code == 401, f"the first token after another sign-in: HTTP {old.status_code}")
    expect(fresh.status_code == 200, f"after a new sign-in: HTTP {fresh.status_code}")
    return "max_age=3, 4 s after the sign-in: the refreshed token 401, the first token 401 (another sign-in " \
           "since does not make it fresh), the new sign-in's 200"


# --- Client ID metadata documents, served here over https on 127.0.0.1.


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(common_name):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, certificate


def make_server_certificate(ca_key, ca_certificate):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, certificate


def pem(certificate):
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


class DocumentServer:
    """An https server on 127.0.0.1 that answers its client ID metadata document at /client.json."""

    def __init__(self, folder, ca_key, ca_certificate):
        key, certificate = make_server_certificate(ca_key, ca_certificate)
        chain = Path(folder) / f"server-{secrets.token_hex(4)}.pem"
        chain.write_text(
            pem(certificate)
            + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
        )
        self.fetches = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/client.json":
                    self.send_error(404)
                    return
                outer.fetches += 1
                body = json.dumps(outer.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(chain)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/client.json"
        self.document = {
            "client_id": self.url,
            "client_name": "selftest CIMD client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def refused_at_authorize(client_id):
    """True when the provider does not know client_id (an error page, no redirect with a code)."""
    try:
        sign_in(client_id, resource=RES_A["resource"])
    except Exception as error:  # StepFailed: DOT's "invalid client" page
        return str(error)
    return None


@check("client ID metadata documents: https on 127.0.0.1 with the CA file, /test/cimd-trust, and untrusted")
def _():
    ca_file = Path(ENV["cimd_ca_file"])
    previous = ca_file.read_text() if ca_file.exists() else None
    with tempfile.TemporaryDirectory() as folder:
        file_ca = make_ca("selftest CA (file)")
        posted_ca = make_ca("selftest CA (posted)")
        untrusted_ca = make_ca("selftest CA (untrusted)")
        servers = [DocumentServer(folder, *ca) for ca in (file_ca, posted_ca, untrusted_ca)]
        by_file, by_post, untrusted = servers
        try:
            before = refused_at_authorize(by_file.url)
            expect(before is not None, "a document on 127.0.0.1 was fetched before its CA was trusted")
            ca_file.write_text((previous or "") + pem(file_ca[1]))
            tokens = sign_in(by_file.url, resource=RES_A["resource"])
            hello = bearer(RES_A["hello"], tokens["access_token"]).json()
            expect(hello["client_id"] == by_file.url, f"{hello}")
            trust = SESSION.post(ENDPOINTS["test_cimd_trust"], data=pem(posted_ca[1]), timeout=TIMEOUT)
            expect(trust.status_code == 200, f"cimd-trust HTTP {trust.status_code} {trust.text[:200]}")
            sign_in(by_post.url, resource=RES_A["resource"])
            refused = refused_at_authorize(untrusted.url)
            expect(refused is not None, "a document with a certificate of an untrusted CA was fetched")
            expect(untrusted.fetches == 0, "the untrusted server answered a request")
            not_ca = SESSION.post(ENDPOINTS["test_cimd_trust"],
                                  data=pem(make_server_certificate(*untrusted_ca)[1]), timeout=TIMEOUT)
            expect(not_ca.status_code == 400, f"a non-CA certificate posted: HTTP {not_ca.status_code}")
        finally:
            for server in servers:
                server.close()
            if previous is None:
                ca_file.unlink(missing_ok=True)
            else:
                ca_file.write_text(previous)
            SESSION.delete(ENDPOINTS["test_cimd_trust"], timeout=TIMEOUT)
    return f"refused before trust; CA file: signed in, /res/a/hello names client_id {by_file.url}; " \
           f"posted CA: signed in; untrusted CA refused (TLS), a non-CA certificate 400"


# --- The hostile resources and servers.


@check("hostile: challenges name their documents")
def _():
    seen = []
    for case, entry in HOSTILE.items():
        response = get(entry["hello"])
        params = challenge(response)
        expect(response.status_code == 401 and params.get("resource_metadata") == entry["metadata"],
               f"{case}: HTTP {response.status_code} {params}")
        seen.append(case)
    return f"{len(seen)} cases: {', '.join(seen)}"


@check("hostile: other-origin's document is on localhost only")
def _():
    entry = HOSTILE["other_origin"]
    expect(urlsplit(entry["metadata"]).hostname == "localhost", entry["metadata"])
    document = get(entry["metadata"]).json()
    expect(document["resource"] == entry["resource"], f"{document}")
    own = get(f"{BASE}/.well-known/oauth-protected-resource/hostile/other-origin")
    expect(own.status_code == 404, f"the 127.0.0.1 well-known URI: HTTP {own.status_code}")
    return f"{entry['metadata']} names {document['resource']}; 127.0.0.1's well-known URI 404"


@check("hostile: documents naming another resource, an http issuer")
def _():
    named = {case: get(HOSTILE[case]["metadata"]).json()["resource"]
             for case in ("wrong_resource", "foreign_resource", "not_a_path_prefix")}
    expect(named["wrong_resource"] == RES_A["resource"], f"{named}")
    expect(named["foreign_resource"].startswith("https://resource.example/"), f"{named}")
    expect(HOSTILE["not_a_path_prefix"]["hello"].startswith(named["not_a_path_prefix"])
           and not HOSTILE["not_a_path_prefix"]["hello"].startswith(named["not_a_path_prefix"] + "/"), f"{named}")
    servers = get(HOSTILE["http_as"]["metadata"]).json()["authorization_servers"]
    expect(servers == ["http://as.example"], f"{servers}")
    return f"{named}; http_as: {servers}"


@check("hostile: variant servers (issuer mismatch, no client id, no PKCE, plain PKCE, no identity)")
def _():
    seen = {}
    for case in ("issuer_mismatch", "noclientid", "nopkce", "plain_pkce", "noidentity"):
        entry = HOSTILE[case]
        servers = get(entry["metadata"]).json()["authorization_servers"]
        expect(servers == [entry["authorization_server"]], f"{case}: {servers}")
        document = get(entry["authorization_server_metadata"]).json()
        seen[case] = document
    expect(seen["issuer_mismatch"]["issuer"] == ENV["issuer"], f"{seen['issuer_mismatch']['issuer']}")
    for case in ("noclientid", "nopkce", "plain_pkce", "noidentity"):
        expect(seen[case]["issuer"] == HOSTILE[case]["authorization_server"], f"{case}: {seen[case]['issuer']}")
    expect("code_challenge_methods_supported" not in seen["nopkce"], "nopkce advertises PKCE")
    expect(seen["plain_pkce"]["code_challenge_methods_supported"] == ["plain"], "plain_pkce")
    expect("registration_endpoint" not in seen["noidentity"]
           and seen["noidentity"]["client_id_metadata_document_supported"] is False, "noidentity")
    registration = SESSION.post(seen["noclientid"]["registration_endpoint"],
                                json={"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"},
                                timeout=TIMEOUT)
    expect(registration.status_code == 201 and "client_id" not in registration.json(),
           f"HTTP {registration.status_code} {registration.text[:200]}")
    return "issuer_mismatch names the real issuer; noclientid's registration 201 without client_id; " \
           "nopkce: no code_challenge_methods_supported; plain_pkce: ['plain']; noidentity: neither"


@check("hostile: oversized document, redirecting metadata")
def _():
    oversized = get(HOSTILE["oversized"]["metadata"])
    expect(oversized.status_code == 200 and len(oversized.content) > 64 * 1024, f"{len(oversized.content)} bytes")
    moved = get(HOSTILE["redirect"]["metadata"])
    expect(moved.status_code == 302 and moved.headers["Location"] == HOSTILE["redirect"]["metadata_moved"],
           f"HTTP {moved.status_code} {moved.headers.get('Location')}")
    target = get(HOSTILE["redirect"]["metadata_moved"]).json()
    expect(target["resource"] == HOSTILE["redirect"]["resource"], f"{target}")
    return f"oversized {len(oversized.content)} bytes; redirect 302 to a good document"


@check("/test/discovery-requests lists the metadata and registration requests")
def _():
    requests_seen = get(ENDPOINTS["test_discovery_requests"]).json()["requests"]
    urls = {entry["url"] for entry in requests_seen}
    for url in (RES_A["metadata"], ENDPOINTS["metadata"], ENDPOINTS["registration"],
                HOSTILE["other_origin"]["metadata"]):
        expect(url in urls, f"{url} not listed")
    expect(all(set(entry) == {"method", "url", "status"} for entry in requests_seen), "entry fields")
    return f"{len(requests_seen)} requests"


passed = RESULTS.count(True)
failed = RESULTS.count(False)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
