"""Sets up and runs one local OAuth 2.0 provider (django-oauth-toolkit).

Started by scripts/provider-start.sh, which passes a fresh run folder. In order:
binds 127.0.0.1 on a port the kernel picks (so two providers never race for
one), migrates a new sqlite database in the run folder, creates the test users
and clients with secrets random to this run, writes env.sh and env.json (env.json
last: its appearance means the provider is ready), then serves until killed.
The RSA key that signs ID tokens (OpenID Connect) is made per run too.
"""

import argparse
import hashlib
import json
import os
import secrets
import shlex
import shutil
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent

USERS = ("alice", "bob")
# What the ID token and the userinfo endpoint say about them (scopes profile, email).
USER_PROFILES = {
    "alice": dict(first_name="Alice", last_name="Liddell", email="alice@example.com"),
    "bob": dict(first_name="Bob", last_name="Dylan", email="bob@example.com"),
}
LOOPBACK_REDIRECT_URIS = [
    # DOT 3.4 accepts any port on an http loopback-IP redirect URI (RFC 8252
    # §7.3), so the first entry covers the CLI's --listen on an ephemeral port.
    "http://127.0.0.1/callback",
    "http://127.0.0.1:8976/callback",
    # A non-loopback URI, matched exactly (port and path included).
    "https://client.example/callback",
]
# OAuth grant_type values (what a client sends), by DOT application grant.
WIRE_GRANT_TYPES = {
    "authorization-code": "authorization_code",
    "password": "password",
    "client-credentials": "client_credentials",
    "urn:ietf:params:oauth:grant-type:device_code": "urn:ietf:params:oauth:grant-type:device_code",
}


def non_negative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a non-negative integer: {text}")
    return value


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("--access-token-lifetime", type=int, default=3600)
    parser.add_argument("--no-iss", action="store_true", help="leave RFC 9207 iss out of redirects")
    parser.add_argument("--device-interval", type=int, default=1)
    parser.add_argument(
        "--reuse-protection",
        action="store_true",
        help="replaying a spent refresh token revokes the whole token family (DOT's REFRESH_TOKEN_REUSE_PROTECTION)",
    )
    parser.add_argument(
        "--grace-period",
        type=non_negative_int,
        default=0,
        metavar="SECONDS",
        help="a rotated-out refresh token is honoured this long (DOT's REFRESH_TOKEN_GRACE_PERIOD_SECONDS)",
    )
    parser.add_argument(
        "--jwks-max-age",
        type=non_negative_int,
        default=3600,
        metavar="SECONDS",
        help="the Cache-Control max-age of the JWKS document (DOT's OIDC_JWKS_MAX_AGE_SECONDS)",
    )
    parser.add_argument(
        "--logout-deletes-tokens",
        action="store_true",
        help="RP-initiated logout revokes the user's tokens (DOT's OIDC_RP_INITIATED_LOGOUT_DELETE_TOKENS)",
    )
    parser.add_argument(
        "--cimd-ca-file",
        type=Path,
        metavar="PATH",
        help="a PEM file of CAs trusted for client ID metadata documents on 127.0.0.1, read at each fetch "
        "(default: <run dir>/cimd-ca.pem; see provider/cimd.py)",
    )
    return parser.parse_args()


def client_specs():
    """The clients to register: name -> settings. Secrets are random per run."""
    from oauth2_provider.models import Application

    # The clients that act for a user sign ID tokens with RS256 (the run's RSA
    # key), never HS256 (the client secret): a request with the `openid` scope
    # gets one, from the code flow and from a refresh of any user's grant.
    rs256 = Application.RS256_ALGORITHM

    def secret():
        return secrets.token_urlsafe(32)

    return {
        "confidential": dict(
            client_type=Application.CLIENT_CONFIDENTIAL,
            grant=Application.GRANT_AUTHORIZATION_CODE,
            secret=secret(),
            redirect_uris=LOOPBACK_REDIRECT_URIS,
            post_logout_redirect_uris=LOOPBACK_REDIRECT_URIS,
            algorithm=rs256,
        ),
        "public": dict(
            client_type=Application.CLIENT_PUBLIC,
            grant=Application.GRANT_AUTHORIZATION_CODE,
            secret="",
            redirect_uris=LOOPBACK_REDIRECT_URIS,
            post_logout_redirect_uris=LOOPBACK_REDIRECT_URIS,
            algorithm=rs256,
        ),
        "password": dict(
            client_type=Application.CLIENT_CONFIDENTIAL,
            grant=Application.GRANT_PASSWORD,
            secret=secret(),
            redirect_uris=[],
            algorithm=rs256,
        ),
        "service": dict(
            client_type=Application.CLIENT_CONFIDENTIAL,
            grant=Application.GRANT_CLIENT_CREDENTIALS,
            secret=secret(),
            redirect_uris=[],
        ),
        "device": dict(
            client_type=Application.CLIENT_PUBLIC,
            grant=Application.GRANT_DEVICE_CODE,
            secret="",
            redirect_uris=[],
            algorithm=rs256,
        ),
        # Client credentials whose id and secret hold characters that the Basic
        # scheme needs form-encoded (RFC 6749 §2.3.1): DOT form-decodes both
        # halves, so a client that skips the encoding is refused.
        "reserved": dict(
            client_type=Application.CLIENT_CONFIDENTIAL,
            grant=Application.GRANT_CLIENT_CREDENTIALS,
            client_id="reserved:client+id%/~",
            secret=secret() + " +/:%&=?#~",
            redirect_uris=[],
        ),
    }


def seed():
    """Creates the users and clients; returns their plaintext credentials."""
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import Application

    users = {}
    for username in USERS:
        # Never starting with "-", which a command line would take for an option
        # (token_urlsafe's alphabet has "-"; browser.py --password -x… failed).
        password = "pw" + secrets.token_urlsafe(12)
        profile = USER_PROFILES[username]
        get_user_model().objects.create_user(username=username, password=password, **profile)
        users[username] = {
            "username": username,
            "password": password,
            "email": profile["email"],
            "given_name": profile["first_name"],
            "family_name": profile["last_name"],
            "name": f"{profile['first_name']} {profile['last_name']}",
        }

    clients = {}
    for name, spec in client_specs().items():
        application = Application(
            name=name,
            client_type=spec["client_type"],
            authorization_grant_type=spec["grant"],
            redirect_uris=" ".join(spec["redirect_uris"]),
            post_logout_redirect_uris=" ".join(spec.get("post_logout_redirect_uris", [])),
            client_secret=spec["secret"],
            skip_authorization=False,
            algorithm=spec.get("algorithm", Application.NO_ALGORITHM),
        )
        if "client_id" in spec:
            application.client_id = spec["client_id"]
        application.full_clean()
        # save() replaces client_secret with its hash: the plaintext is spec["secret"].
        application.save()
        clients[name] = {
            "client_id": application.client_id,
            "client_secret": spec["secret"],
            "client_type": spec["client_type"],
            "grant_type": WIRE_GRANT_TYPES[spec["grant"]],
            "redirect_uris": spec["redirect_uris"],
            "pkce_required": spec["client_type"] == Application.CLIENT_PUBLIC,
            "post_logout_redirect_uris": spec.get("post_logout_redirect_uris", []),
            # The alg of its ID tokens (scope openid), or None: it gets none.
            "id_token_signing_alg": spec.get("algorithm") or None,
        }
    return users, clients


def describe_resources(base):
    """The protected resources of provider/resources.py and provider/hostile.py: their URLs."""
    from provider import hostile, resources

    def endpoints(path):
        return {
            "resource": f"{base}/{path}",
            "hello": f"{base}/{path}/hello",
            "admin": f"{base}/{path}/admin",
            "insufficient_always": f"{base}/{path}/insufficient-always",
            "fresh_auth": f"{base}/{path}/fresh-auth",
        }

    good = {}
    for name, resource in resources.RESOURCES.items():
        good[name] = endpoints(resource.path) | {
            "metadata": f"{base}/.well-known/oauth-protected-resource/{resource.path}",
            "challenge_names_metadata": resource.metadata_in_challenge,
        }
    bad = {}
    for case, resource in hostile.HOSTILE_RESOURCES.items():
        entry = endpoints(resource.path)
        # The URL the challenge names (resource_metadata).
        entry["metadata"] = {
            "other-origin": f"http://localhost:{base.rsplit(':', 1)[1]}/.well-known/oauth-protected-resource/{resource.path}",
            "redirect": f"{base}/{resource.path}/metadata",
        }.get(case, f"{base}/.well-known/oauth-protected-resource/{resource.path}")
        if case in hostile.SERVERS:
            entry["authorization_server"] = f"{base}/{resource.path}"
            entry["authorization_server_metadata"] = f"{base}/.well-known/oauth-authorization-server/{resource.path}"
        bad[case.replace("-", "_")] = entry
    bad["redirect"]["metadata_moved"] = f"{base}/hostile/redirect/metadata-moved"
    bad["noclientid"]["registration"] = f"{base}/hostile/noclientid/register"
    return good, bad


def describe(arguments, port, users, clients):
    base = f"http://127.0.0.1:{port}"
    good_resources, hostile_resources = describe_resources(base)
    return {
        "name": arguments.name,
        "pid": os.getpid(),
        "port": port,
        "base_url": base,
        "issuer": base,
        "iss_parameter": not arguments.no_iss,
        "access_token_lifetime": arguments.access_token_lifetime,
        "device_interval": arguments.device_interval,
        "reuse_protection": arguments.reuse_protection,
        "grace_period": arguments.grace_period,
        "oidc": True,
        "jwks_max_age": arguments.jwks_max_age,
        "logout_deletes_tokens": arguments.logout_deletes_tokens,
        "run_dir": str(arguments.run_dir),
        "cimd_ca_file": str(arguments.cimd_ca_file),
        "browser": str(REPO_ROOT / "scripts" / "provider-browser.sh"),
        "endpoints": {
            "metadata": f"{base}/.well-known/oauth-authorization-server",
            "authorize": f"{base}/o/authorize/",
            "token": f"{base}/o/token/",
            "revoke": f"{base}/o/revoke_token/",
            "introspect": f"{base}/o/introspect/",
            "device_authorization": f"{base}/o/device-authorization/",
            "device_verification": f"{base}/o/device/",
            "login": f"{base}/accounts/login/",
            "api_me": f"{base}/api/me",
            "api_admin": f"{base}/api/admin",
            "api_echo": f"{base}/api/echo",
            # This test provider's own: see provider/testing.py.
            "test_token_requests": f"{base}/test/token-requests",
            "test_grants": f"{base}/test/grants",
            "test_delay_next_token_response": f"{base}/test/delay-next-token-response",
            "test_redirect": f"{base}/test/redirect",
            "test_expire_access_token": f"{base}/test/expire-access-token",
            # OpenID Connect (DOT's views; discovery at the root, OIDC Discovery §4).
            "openid_configuration": f"{base}/.well-known/openid-configuration",
            "jwks": f"{base}/o/.well-known/jwks.json",
            "userinfo": f"{base}/o/userinfo/",
            "end_session": f"{base}/o/logout/",
            # This test provider's own: see provider/oidc.py, provider/client_assertions.py.
            "test_rotate_signing_key": f"{base}/test/rotate-signing-key",
            "test_jwks_outage": f"{base}/test/jwks-outage",
            "test_client_keys": f"{base}/test/client-keys",
            "test_jwt_client_token": f"{base}/test/jwt-client-token",
            # Clients that configure themselves (issue 38): RFC 7591 (RFC 7592 at
            # <registration><client_id>/), the root RFC 9728 document (resource
            # <origin>, which /api/* name in their challenges), and this test
            # provider's own: provider/testing.py, provider/cimd.py.
            "registration": f"{base}/o/register/",
            "resource_metadata": f"{base}/.well-known/oauth-protected-resource",
            "test_discovery_requests": f"{base}/test/discovery-requests",
            "test_forget_client": f"{base}/test/forget-client",
            "test_cimd_trust": f"{base}/test/cimd-trust",
        },
        # provider/resources.py and provider/hostile.py.
        "resources": good_resources,
        "hostile": hostile_resources,
        "clients": clients,
        "users": users,
    }


def shell_lines(info):
    values = {
        "PROVIDER_NAME": info["name"],
        "PROVIDER_PID": info["pid"],
        "PROVIDER_PORT": info["port"],
        "PROVIDER_BASE_URL": info["base_url"],
        "PROVIDER_ISSUER": info["issuer"],
        "PROVIDER_ISS_PARAMETER": "1" if info["iss_parameter"] else "0",
        "PROVIDER_ACCESS_TOKEN_LIFETIME": info["access_token_lifetime"],
        "PROVIDER_DEVICE_INTERVAL": info["device_interval"],
        "PROVIDER_REUSE_PROTECTION": "1" if info["reuse_protection"] else "0",
        "PROVIDER_GRACE_PERIOD": info["grace_period"],
        "PROVIDER_OIDC": "1" if info["oidc"] else "0",
        "PROVIDER_JWKS_MAX_AGE": info["jwks_max_age"],
        "PROVIDER_LOGOUT_DELETES_TOKENS": "1" if info["logout_deletes_tokens"] else "0",
        "PROVIDER_RUN_DIR": info["run_dir"],
        "PROVIDER_BROWSER": info["browser"],
        "PROVIDER_CIMD_CA_FILE": info["cimd_ca_file"],
    }
    for endpoint, url in info["endpoints"].items():
        values[f"PROVIDER_{endpoint.upper()}_URL"] = url
    # PROVIDER_RESOURCE_A_HELLO_URL, PROVIDER_HOSTILE_OTHER_ORIGIN_METADATA_URL, ...
    for group, table in (("RESOURCE", info["resources"]), ("HOSTILE", info["hostile"])):
        for name, entry in table.items():
            for key, value in entry.items():
                if isinstance(value, str):
                    values[f"PROVIDER_{group}_{name.upper()}_{key.upper()}_URL"] = value
    for name, client in info["clients"].items():
        prefix = f"PROVIDER_{name.upper()}"
        values[f"{prefix}_CLIENT_ID"] = client["client_id"]
        values[f"{prefix}_CLIENT_SECRET"] = client["client_secret"]
        values[f"{prefix}_CLIENT_TYPE"] = client["client_type"]
        values[f"{prefix}_GRANT_TYPE"] = client["grant_type"]
        values[f"{prefix}_REDIRECT_URI"] = client["redirect_uris"][0] if client["redirect_uris"] else ""
        values[f"{prefix}_REDIRECT_URIS"] = " ".join(client["redirect_uris"])
        values[f"{prefix}_POST_LOGOUT_REDIRECT_URIS"] = " ".join(client["post_logout_redirect_uris"])
        values[f"{prefix}_ID_TOKEN_SIGNING_ALG"] = client["id_token_signing_alg"] or ""
    for name, user in info["users"].items():
        values[f"PROVIDER_{name.upper()}_USERNAME"] = user["username"]
        values[f"PROVIDER_{name.upper()}_PASSWORD"] = user["password"]
        values[f"PROVIDER_{name.upper()}_EMAIL"] = user["email"]
        values[f"PROVIDER_{name.upper()}_NAME"] = user["name"]
    lines = ["# Written by Tests/Provider/serve.py; the secrets are valid for this run only."]
    lines += [f"export {key}={shlex.quote(str(value))}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def write_private(path, text):
    """Writes text to path atomically, readable by the owner only (it holds secrets)."""
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def migrated_database(run_dir):
    """Creates the run's database: a copy of a migrated empty one, made once.

    Migrating DOT's schema takes about a second; the copy is kept next to the run
    folders, named after what decides the schema (the pinned packages, the apps).
    """
    from django.conf import settings
    from django.core.management import call_command

    schema = hashlib.sha256()
    schema.update((HERE / "requirements.txt").read_bytes())
    schema.update(sys.version.encode())
    schema.update(" ".join(settings.INSTALLED_APPS).encode())
    template = run_dir.parent / f"schema-{schema.hexdigest()[:16]}.sqlite3"
    database = Path(settings.DATABASES["default"]["NAME"])
    if template.exists():
        shutil.copyfile(template, database)
        return
    call_command("migrate", verbosity=0, interactive=False)
    # Another provider may be doing the same: copy, then rename into place.
    # VACUUM INTO, not a file copy: in WAL mode what the migration wrote may
    # still be in db.sqlite3-wal, and a copy of db.sqlite3 alone has no tables.
    partial = template.with_name(f"{template.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    with closing(sqlite3.connect(database)) as connection:
        connection.execute("VACUUM INTO ?", (str(partial),))
    os.replace(partial, template)


def main():
    arguments = parse_arguments()
    arguments.run_dir = arguments.run_dir.resolve()
    sys.path.insert(0, str(HERE))

    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    class Server(ThreadedWSGIServer):
        # Tests run flows in parallel, hundreds at once on a busy machine; a
        # full backlog drops connections, which come back 1, 3, 7, 15, 31 s later.
        request_queue_size = 1024

    server = Server(("127.0.0.1", 0), WSGIRequestHandler)
    port = server.server_address[1]

    os.environ["DJANGO_SETTINGS_MODULE"] = "provider.settings"
    os.environ["PROVIDER_RUN_DIR"] = str(arguments.run_dir)
    os.environ["PROVIDER_BASE_URL"] = f"http://127.0.0.1:{port}"
    os.environ["PROVIDER_SECRET_KEY"] = secrets.token_hex(32)
    os.environ["PROVIDER_ACCESS_TOKEN_LIFETIME"] = str(arguments.access_token_lifetime)
    os.environ["PROVIDER_ISS"] = "0" if arguments.no_iss else "1"
    os.environ["PROVIDER_DEVICE_INTERVAL"] = str(arguments.device_interval)
    os.environ["PROVIDER_REUSE_PROTECTION"] = "1" if arguments.reuse_protection else "0"
    os.environ["PROVIDER_GRACE_PERIOD"] = str(arguments.grace_period)
    os.environ["PROVIDER_JWKS_MAX_AGE"] = str(arguments.jwks_max_age)
    os.environ["PROVIDER_LOGOUT_DELETES_TOKENS"] = "1" if arguments.logout_deletes_tokens else "0"
    if arguments.cimd_ca_file is None:
        arguments.cimd_ca_file = arguments.run_dir / "cimd-ca.pem"
    arguments.cimd_ca_file = arguments.cimd_ca_file.resolve()
    os.environ["PROVIDER_CIMD_CA_FILE"] = str(arguments.cimd_ca_file)
    # The RSA key that signs ID tokens: read by provider/settings.py in this
    # process (the environment is only the way in), never written to disk.
    from provider.keys import new_rsa_private_key_pem

    os.environ["PROVIDER_OIDC_RSA_KEY"] = new_rsa_private_key_pem()

    import django
    from django.core.wsgi import get_wsgi_application

    django.setup()
    migrated_database(arguments.run_dir)
    users, clients = seed()
    # client_secret_jwt assertions (HS256) need the plaintext secrets, which DOT
    # does not keep: the JWT test token endpoint gets them (provider/client_assertions.py).
    from provider.client_assertions import register_client_secrets

    register_client_secrets({client["client_id"]: client["client_secret"] for client in clients.values()})
    server.set_app(get_wsgi_application())

    info = describe(arguments, port, users, clients)
    write_private(arguments.run_dir / "env.sh", shell_lines(info))
    write_private(arguments.run_dir / "env.json", json.dumps(info, indent=2) + "\n")
    print(f"provider {arguments.name}: serving {info['base_url']} (pid {os.getpid()})", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
