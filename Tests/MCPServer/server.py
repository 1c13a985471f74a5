"""An MCP server protected by the local provider: the witness of issue 38.

The official Python MCP SDK (PyPI `mcp`, pinned in requirements.txt) serves
one tool, `whoami`, over streamable HTTP on 127.0.0.1, as a resource server
only: the SDK's own bearer middleware answers 401 with
`WWW-Authenticate: Bearer ..., resource_metadata="..."` and serves the RFC 9728
document naming the provider as the authorization server. Tokens are checked by
RFC 7662 introspection at the provider, and only a token whose audience (DOT's
`aud`, the RFC 8707 `resource` the client asked for) is this server is
accepted: a token the same provider issued for another resource is refused.

It is an independent implementation of the resource-server side of the MCP
authorization spec: nothing here comes from swift-oauth2.

    server.py --provider-env .build/provider/main/env.json --run-dir DIR

writes DIR/env.json (url, resource, resource_metadata, pid, port) once it is
listening. scripts/mcp-server.sh starts and stops it.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
import warnings
from pathlib import Path

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

LOG = logging.getLogger("mcp-witness")
# Introspection never goes through a proxy: the provider is on loopback.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def same_resource(a: str, b: str) -> bool:
    """RFC 8707 audiences compared as the SDK compares them: a trailing slash aside."""
    return a.rstrip("/") == b.rstrip("/")


class IntrospectionVerifier(TokenVerifier):
    """Asks the provider (RFC 7662) whether a token is active, and for whom."""

    def __init__(self, endpoint: str, client_id: str, client_secret: str, resource: str):
        self.endpoint = endpoint
        # RFC 6749 §2.3.1: both parts form-encoded before Basic.
        pair = f"{urllib.parse.quote(client_id, safe='')}:{urllib.parse.quote(client_secret, safe='')}"
        self.authorization = "Basic " + base64.b64encode(pair.encode()).decode()
        self.resource = resource

    def _introspect(self, token: str) -> dict | None:
        request = urllib.request.Request(
            self.endpoint,
            data=urllib.parse.urlencode({"token": token}).encode(),
            headers={
                "Authorization": self.authorization,
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with OPENER.open(request, timeout=10) as response:
                return json.loads(response.read(1 << 20))
        except (urllib.error.URLError, ValueError) as error:
            LOG.warning("introspection failed: %s", error)
            return None

    async def verify_token(self, token: str) -> AccessToken | None:
        answer = await anyio.to_thread.run_sync(self._introspect, token)
        if not answer or answer.get("active") is not True:
            return None
        audiences = answer.get("aud") or []
        if isinstance(audiences, str):
            audiences = audiences.split()
        # RFC 8707: a token without an audience, or for another resource, is
        # not for this server. The SDK checks `resource` again
        # (validate_token_resource); this check does not rely on it.
        resource = next((a for a in audiences if same_resource(a, self.resource)), None)
        if resource is None:
            LOG.warning("refused a token for %r, not %s", audiences, self.resource)
            return None
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id", "")),
            scopes=str(answer.get("scope", "")).split(),
            expires_at=answer.get("exp"),
            resource=self.resource,
            subject=answer.get("username"),
        )


def build(resource: str, provider: dict, introspector: dict, scopes: list[str]) -> MCPServer:
    verifier = IntrospectionVerifier(
        provider["endpoints"]["introspect"],
        introspector["client_id"],
        introspector["client_secret"],
        resource,
    )
    server = MCPServer(
        name="swift-oauth2 witness",
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url=provider["issuer"],
            resource_server_url=resource,
            required_scopes=scopes,
            validate_token_resource=True,
        ),
    )

    @server.tool(description="Who the token is for, and the resource it was issued for.")
    def whoami() -> str:
        token = get_access_token()
        if token is None:  # the middleware lets no request here without one
            return "nobody"
        return json.dumps(
            {"username": token.subject, "client_id": token.client_id, "resource": token.resource, "scope": token.scopes}
        )

    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider-env", required=True, type=Path, help="the provider's env.json")
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--introspection-client", default="service", help="the provider client that introspects")
    parser.add_argument("--scope", action="append", default=None, help="a scope every request needs (repeatable)")
    parser.add_argument("--path", default="/mcp", help="the MCP endpoint's path")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # validate_token_resource is set; the SDK's other deprecation notes are noise here.
    warnings.simplefilter("ignore")

    provider = json.loads(arguments.provider_env.read_text())
    introspector = provider["clients"][arguments.introspection_client]

    # A free port, bound before the URL is written so that nothing else takes it.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    resource = base + arguments.path
    scopes = arguments.scope if arguments.scope is not None else ["read"]

    server = build(resource, provider, introspector, scopes)
    # JSON answers, not SSE: the Swift SDK's HTTP transport reads no SSE on Linux.
    app = server.streamable_http_app(streamable_http_path=arguments.path, json_response=True, host="127.0.0.1")

    info = {
        "pid": os.getpid(),
        "port": port,
        "url": resource,
        "resource": resource,
        "resource_metadata": f"{base}/.well-known/oauth-protected-resource{arguments.path}",
        "issuer": provider["issuer"],
        "scopes": scopes,
        "provider_env": str(arguments.provider_env.resolve()),
    }
    arguments.run_dir.mkdir(parents=True, exist_ok=True)
    temporary = arguments.run_dir / "env.json.tmp"
    temporary.write_text(json.dumps(info, indent=2) + "\n")
    temporary.replace(arguments.run_dir / "env.json")

    config = uvicorn.Config(app, log_level="info", access_log=True, lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])
    return 0


if __name__ == "__main__":
    sys.exit(main())
