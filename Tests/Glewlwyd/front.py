"""The front of glewlwyd (and, with TLS, of the resource server): one request at a time, and mutual TLS.

    front.py --port PORT --glewlwyd http://127.0.0.1:P --resource http://127.0.0.1:R [--tls-dir DIR]

glewlwyd 2.7.5 is not safe under concurrent writes: it shares one database
connection between its request threads and reads the id of the row it just
inserted from that connection (hoel's h_last_insert_id), so two sign-ins at
once can get an id of the other's and fail with server_error ("Error executing
sql query" in its log; seen with the Swift tests running in parallel). The
front passes the requests for glewlwyd on one at a time, which is what a
client sees from any provider that serializes its writes; concurrent requests
still arrive at the front concurrently.

Without --tls-dir it serves plain http://127.0.0.1:PORT. With it, it serves
https with DIR/server.crt (issued by DIR/ca.crt for 127.0.0.1), asks every
client for a certificate and accepts one issued by the run's CA or the
registered self-signed one (DIR/self-client.crt), or none. What it verified
goes on as headers, and any such header the client sent itself is dropped
first:

- to glewlwyd (every path but /resource/...): `X-Client-Cert`, the PEM
  certificate on one line (glewlwyd's OIDC plugin reads it with
  client-cert-source "header", the reverse-proxy set-up its documentation
  describes; glewlwyd itself listens on 127.0.0.1 only);
- to the resource server (/resource/... with the prefix taken off):
  `X-Client-Cert-S256`, the certificate's SHA-256 thumbprint (base64url, as
  in `cnf.x5t#S256`), and `X-Original-URL`, the URL the client used (the
  DPoP `htu` to check).

/healthz answers 200 (for the start script).
"""

import argparse
import base64
import hashlib
import http.client
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "content-length", "host"}
FORWARDED = ("x-client-cert", "x-client-cert-s256", "x-original-url")


class Front(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "glewlwyd-front/1"

    def log_message(self, format, *args):
        sys.stderr.write("%s - %s\n" % (self.address_string(), format % args))

    def relay(self):
        if self.path == "/healthz":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {name: value for name, value in self.headers.items()
                   if name.lower() not in HOP_BY_HOP and name.lower() not in FORWARDED}
        der = self.connection.getpeercert(binary_form=True) if self.server.tls else None
        if self.path.startswith("/resource/"):
            upstream, path = self.server.resource, self.path[len("/resource"):]
            scheme = "https" if self.server.tls else "http"
            headers["X-Original-URL"] = f"{scheme}://127.0.0.1:{self.server.server_port}{self.path}"
            if der:
                headers["X-Client-Cert-S256"] = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
        else:
            upstream, path = self.server.glewlwyd, self.path
            if der:
                headers["X-Client-Cert"] = ssl.DER_cert_to_PEM_cert(der).strip().replace("\n", " ")
        target = urlsplit(upstream)
        lock = self.server.glewlwyd_lock if upstream == self.server.glewlwyd else threading.Lock()
        with lock:
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                connection.request(self.command, path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except OSError as error:
                self.send_error(502, f"upstream: {error}")
                return
            finally:
                connection.close()
        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = relay


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--glewlwyd", required=True)
    parser.add_argument("--resource", required=True)
    parser.add_argument("--tls-dir", help="serve https and check client certificates (mutual TLS)")
    arguments = parser.parse_args()
    # Tests connect all at once; the default backlog of 5 drops connections (see op.py).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), Front)
    server.daemon_threads = True
    server.tls = arguments.tls_dir is not None
    if server.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(f"{arguments.tls_dir}/server.crt", f"{arguments.tls_dir}/server.key")
        context.load_verify_locations(f"{arguments.tls_dir}/ca.crt")
        context.load_verify_locations(f"{arguments.tls_dir}/self-client.crt")
        context.verify_mode = ssl.CERT_OPTIONAL
        # Each handshake in its connection's own thread, on its first read: not
        # inside accept(), where they ran one after another on the accepting thread.
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.glewlwyd = arguments.glewlwyd
    server.resource = arguments.resource
    server.glewlwyd_lock = threading.Lock()
    scheme = "https" if server.tls else "http"
    print(f"front: serving {scheme}://127.0.0.1:{arguments.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
