#!/usr/bin/env python3
"""Resource servers for the credential helper tests: python3's standard library only.

    serve.py git  --check-url URL --repos DIR [--tls-cert PEM --tls-key PEM]
    serve.py kube --check-url URL [--tls-cert PEM --tls-key PEM]

Binds 127.0.0.1 on a free port and prints it as the first line of stdout.
Every request must carry an access token, as HTTP Basic's password (git) or
as a Bearer token (git or kube), that the local provider accepts: it is
checked by calling --check-url (the provider's /api/me) with it, on every
request, so a revoked or expired token is refused at once. Otherwise: 401
with `WWW-Authenticate: Basic realm="git"` (git) or a Kubernetes Status (kube).

git: the repositories under --repos, served by `git http-backend` as a CGI
(clone, fetch and push). kube: any GET answers 200 with a small JSON object
(`kubectl get --raw /api/v1/ping` prints it).

One line per request on stderr: method, path, (the Authorization scheme, or none), "ok" or "refused".
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def token_of(header):
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return value.strip() or None
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except Exception:
            return None
        _, _, password = decoded.partition(":")
        return password or None
    return None


def provider_accepts(check_url, token):
    request = urllib.request.Request(check_url, headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status == 200
    except urllib.error.HTTPError:
        return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "credential-test-server"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def note(self, outcome):
        scheme = (self.headers.get("Authorization") or "none").split(" ")[0]
        sys.stderr.write(f"{self.command} {self.path} ({scheme}) {outcome}\n")
        sys.stderr.flush()

    def authorized(self):
        token = token_of(self.headers.get("Authorization"))
        return token is not None and provider_accepts(self.server.check_url, token)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def refuse(self):
        self.note("refused")
        self.read_body()
        if self.server.mode == "git":
            body = b"authentication required\n"
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Type", "text/plain")
        else:
            body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "message": "Unauthorized", "reason": "Unauthorized", "code": 401}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        if not self.authorized():
            self.refuse()
            return
        self.note("ok")
        if self.server.mode == "kube":
            body = json.dumps({"ping": "pong"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.run_http_backend()

    def run_http_backend(self):
        path, _, query = self.path.partition("?")
        body = self.read_body()
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.server.repos,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "oauth2",
            "REMOTE_ADDR": "127.0.0.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        for name in ("Content-Encoding", "Git-Protocol"):
            if self.headers.get(name):
                environment["HTTP_" + name.upper().replace("-", "_")] = self.headers[name]
        result = subprocess.run(["git", "http-backend"], input=body, env=environment, capture_output=True)
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = result.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name.strip(), value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = handle_any
    do_POST = handle_any


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["git", "kube"])
    parser.add_argument("--check-url", required=True)
    parser.add_argument("--repos")
    parser.add_argument("--tls-cert", help="serve https with this PEM certificate (and --tls-key)")
    parser.add_argument("--tls-key")
    arguments = parser.parse_args()
    if arguments.mode == "git" and not arguments.repos:
        parser.error("git needs --repos")
    # Tests connect all at once; the default backlog of 5 drops connections (see op.py).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.mode = arguments.mode
    server.check_url = arguments.check_url
    server.repos = arguments.repos
    if arguments.tls_cert:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(arguments.tls_cert, arguments.tls_key)
        # Each handshake in its connection's own thread, on its first read: not
        # inside accept(), where they ran one after another on the accepting thread.
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
