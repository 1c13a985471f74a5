"""Sets up and runs one local OAuth 2.0 provider (django-oauth-toolkit).

Started by scripts/provider-start.sh, which passes a fresh run folder. In order:
binds 127.0.0.1 on a port the kernel picks (so two providers never race for
one), migrates a new sqlite database in the run folder, creates the test users
and clients with secrets random to this run, writes env.sh and env.json (env.json
last: its appearance means the provider is ready), then serves until killed.
"""

import argparse
import hashlib
import json
import os
import secrets
import shlex
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent

USERS = ("alice", "bob")
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
    return parser.parse_args()


def client_specs():
    """The clients to register: name -> settings. Secrets are random per run."""
    from oauth2_provider.models import Application

    def secret():
        return secrets.token_urlsafe(32)

    return {
        "confidential": dict(
            client_type=Application.CLIENT_CONFIDENTIAL,
            grant=Application.GRANT_AUTHORIZATION_CODE,
            secret=secret(),
            redirect_uris=LOOPBACK_REDIRECT_URIS,
        ),
        "public": dict(
            client_type=Application.CLIENT_PUBLIC,
            grant=Application.GRANT_AUTHORIZATION_CODE,
            secret="",
            redirect_uris=LOOPBACK_REDIRECT_URIS,
        ),
        "password": dict(
            client_type=Application.CLIENT_CONFIDENTIAL,
            grant=Application.GRANT_PASSWORD,
            secret=secret(),
            redirect_uris=[],
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
        password = secrets.token_urlsafe(12)
        get_user_model().objects.create_user(username=username, password=password)
        users[username] = {"username": username, "password": password}

    clients = {}
    for name, spec in client_specs().items():
        application = Application(
            name=name,
            client_type=spec["client_type"],
            authorization_grant_type=spec["grant"],
            redirect_uris=" ".join(spec["redirect_uris"]),
            client_secret=spec["secret"],
            skip_authorization=False,
            algorithm=Application.NO_ALGORITHM,
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
        }
    return users, clients


def describe(arguments, port, users, clients):
    base = f"http://127.0.0.1:{port}"
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
        "run_dir": str(arguments.run_dir),
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
            # This test provider's own: see provider/testing.py.
            "test_token_requests": f"{base}/test/token-requests",
            "test_grants": f"{base}/test/grants",
            "test_delay_next_token_response": f"{base}/test/delay-next-token-response",
            "test_redirect": f"{base}/test/redirect",
        },
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
        "PROVIDER_RUN_DIR": info["run_dir"],
        "PROVIDER_BROWSER": info["browser"],
    }
    for endpoint, url in info["endpoints"].items():
        values[f"PROVIDER_{endpoint.upper()}_URL"] = url
    for name, client in info["clients"].items():
        prefix = f"PROVIDER_{name.upper()}"
        values[f"{prefix}_CLIENT_ID"] = client["client_id"]
        values[f"{prefix}_CLIENT_SECRET"] = client["client_secret"]
        values[f"{prefix}_CLIENT_TYPE"] = client["client_type"]
        values[f"{prefix}_GRANT_TYPE"] = client["grant_type"]
        values[f"{prefix}_REDIRECT_URI"] = client["redirect_uris"][0] if client["redirect_uris"] else ""
        values[f"{prefix}_REDIRECT_URIS"] = " ".join(client["redirect_uris"])
    for name, user in info["users"].items():
        values[f"PROVIDER_{name.upper()}_USERNAME"] = user["username"]
        values[f"PROVIDER_{name.upper()}_PASSWORD"] = user["password"]
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
    partial = template.with_name(f"{template.name}.{os.getpid()}.tmp")
    shutil.copyfile(database, partial)
    os.replace(partial, template)


def main():
    arguments = parse_arguments()
    arguments.run_dir = arguments.run_dir.resolve()
    sys.path.insert(0, str(HERE))

    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    class Server(ThreadedWSGIServer):
        # Tests run flows in parallel; the default backlog of 10 is tight.
        request_queue_size = 64

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

    import django
    from django.core.wsgi import get_wsgi_application

    django.setup()
    migrated_database(arguments.run_dir)
    users, clients = seed()
    server.set_app(get_wsgi_application())

    info = describe(arguments, port, users, clients)
    write_private(arguments.run_dir / "env.sh", shell_lines(info))
    write_private(arguments.run_dir / "env.json", json.dumps(info, indent=2) + "\n")
    print(f"provider {arguments.name}: serving {info['base_url']} (pid {os.getpid()})", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
