#!/usr/bin/env python3
"""The HTTP and HTTPS server the transport tests talk to, on 127.0.0.1.

Started by the tests as a child process. It binds ephemeral ports, makes a
throw-away CA and a server certificate for 127.0.0.1/localhost with the
openssl CLI (and a second one, from the same CA, for another name only),
prints one line

    READY <http-port> <https-port> <ca-file> <misnamed-https-port>

where the last port serves that other name's certificate,

and serves until its stdin closes (the test process ended, however it ended),
then removes its temporary files and exits.

Tests tag their requests with an `X-Test-Tag` header so that counts kept here
(connections, requests, how much of a large body got out) stay apart while
tests run in parallel.
"""

import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

LOCK = threading.Lock()
CONNECTIONS = {}   # tag -> connections that carried a request with that tag
REQUESTS = {}      # tag -> requests with that tag
REPORTS = {}       # tag -> {"sent": bytes, "complete": bool} for /big
IN_FLIGHT = {}     # tag -> requests with that tag being answered now
MOST_AT_ONCE = {}  # tag -> the most requests with that tag answered at once


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "TransportTestServer"
    sys_version = ""

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle's
        # algorithm holds the body until the client's delayed ACK (40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.tags_seen = set()

    def log_message(self, format, *args):
        pass

    # One method for every verb: the path decides.
    def handle_any(self):
        tag = self.headers.get("X-Test-Tag")
        if tag:
            with LOCK:
                REQUESTS[tag] = REQUESTS.get(tag, 0) + 1
                if tag not in self.tags_seen:
                    self.tags_seen.add(tag)
                    CONNECTIONS[tag] = CONNECTIONS.get(tag, 0) + 1
                IN_FLIGHT[tag] = IN_FLIGHT.get(tag, 0) + 1
                MOST_AT_ONCE[tag] = max(MOST_AT_ONCE.get(tag, 0), IN_FLIGHT[tag])
        try:
            self.route_request()
        finally:
            if tag:
                with LOCK:
                    IN_FLIGHT[tag] -= 1

    def route_request(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        path = parts.path
        route = ROUTES.get(path.split("/")[1] if "/" in path else path)
        if route is None:
            self.reply(404, b"not found")
        else:
            route(self, path, query, body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

    def reply(self, status, body, headers=(), content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # /echo/<text>: the text back.
    def route_echo(self, path, query, body):
        self.reply(200, unquote(path[len("/echo/"):]).encode())

    # /echo-body: the request body back, with the method in X-Method.
    def route_echo_body(self, path, query, body):
        self.reply(200, body, headers=[("X-Method", self.command)], content_type="application/octet-stream")

    # /headers: the request's header fields as JSON; some response fields to parse.
    def route_headers(self, path, query, body):
        fields = [[name, value] for name, value in self.headers.items()]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Single", "one")
        self.send_header("X-Multi", "a")
        self.send_header("X-Multi", "b")
        self.send_header("X-Padded", "   padded value   ")
        self._headers_buffer.append(b"X-Folded: first\r\n   second\r\n")  # obsolete line folding
        payload = json.dumps(fields).encode()
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    # /many-headers?count=N: N header fields of 100 bytes each.
    def route_many_headers(self, path, query, body):
        self.send_response(200)
        for index in range(int(query.get("count", "1"))):
            self.send_header("X-Field-%d" % index, "v" * 90)
        self.send_header("Content-Length", "0")
        self.end_headers()

    # /stats?tag=T: connections and requests seen with that tag, and the most answered at once.
    def route_stats(self, path, query, body):
        tag = query.get("tag", "")
        with LOCK:
            payload = {
                "connections": CONNECTIONS.get(tag, 0),
                "requests": REQUESTS.get(tag, 0),
                "mostAtOnce": MOST_AT_ONCE.get(tag, 0),
            }
        self.reply(200, json.dumps(payload).encode(), content_type="application/json")

    # /hang: never answers; returns when the client goes away (or after 60 s).
    def route_hang(self, path, query, body):
        deadline = time.time() + 60
        while time.time() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.1)
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        break
                except OSError:
                    break
        self.close_connection = True

    # /slow?delay=S: answers "slow" after S seconds.
    def route_slow(self, path, query, body):
        time.sleep(float(query.get("delay", "1")))
        self.reply(200, b"slow")

    # /big?size=N&chunked=0|1&tag=T: N bytes, with Content-Length or chunked; reports how far it got.
    # HEAD: only the headers, announcing N bytes.
    def route_big(self, path, query, body):
        size = int(query.get("size", "0"))
        chunked = query.get("chunked") == "1"
        tag = query.get("tag", "")
        if self.command == "HEAD":
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            return
        chunk = b"x" * 65536
        sent = 0
        complete = False
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(size))
            self.end_headers()
            while sent < size:
                piece = chunk[: min(len(chunk), size - sent)]
                if chunked:
                    self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                else:
                    self.wfile.write(piece)
                sent += len(piece)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            complete = True
        except OSError:
            pass
        with LOCK:
            REPORTS[tag] = {"sent": sent, "complete": complete}

    # /report?tag=T: what /big managed to send, 404 while it is still sending.
    def route_report(self, path, query, body):
        with LOCK:
            report = REPORTS.get(query.get("tag", ""))
        if report is None:
            self.reply(404, b"not yet")
        else:
            self.reply(200, json.dumps(report).encode(), content_type="application/json")

    # /drop: announces 1000 bytes, sends 10, closes the connection.
    def route_drop(self, path, query, body):
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b"x" * 10)
        self.wfile.flush()
        self.close_connection = True

    # /redirect?to=P&status=S: S (302 by default) to P, with a field only the redirect carries.
    def route_redirect(self, path, query, body):
        status = int(query.get("status", "302"))
        self.reply(status, b"moved", headers=[("Location", query.get("to", "/echo/none")), ("X-Hop", "redirect")])

    # /loop: redirects to itself forever.
    def route_loop(self, path, query, body):
        self.reply(302, b"again", headers=[("Location", "/loop")])

    # /closed-port: a port on 127.0.0.1 that nothing listens on (bound, then closed).
    def route_closed_port(self, path, query, body):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        self.reply(200, str(port).encode())


ROUTES = {
    "echo": Handler.route_echo,
    "echo-body": Handler.route_echo_body,
    "headers": Handler.route_headers,
    "many-headers": Handler.route_many_headers,
    "stats": Handler.route_stats,
    "hang": Handler.route_hang,
    "slow": Handler.route_slow,
    "big": Handler.route_big,
    "report": Handler.route_report,
    "drop": Handler.route_drop,
    "redirect": Handler.route_redirect,
    "loop": Handler.route_loop,
    "closed-port": Handler.route_closed_port,
}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default 5 drops SYNs when 64 clients connect at once

    def handle_error(self, request, client_address):
        pass  # clients that hang up (cancellation, size limits, TLS refusals) are expected


def make_certificates(directory):
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, cwd=directory,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Transport Test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    def leaf(name, subject, alt_names):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
        with open(os.path.join(directory, f"{name}.ext"), "w") as ext:
            ext.write(f"subjectAltName={alt_names}\n"
                      "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
        return os.path.join(directory, f"{name}.pem"), os.path.join(directory, f"{name}.key")
    server = leaf("server", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    # Valid in every way but its name: what a client must still refuse.
    misnamed = leaf("misnamed", "/CN=other.invalid", "DNS:other.invalid")
    return os.path.join(directory, "ca.pem"), server, misnamed


def main():
    directory = tempfile.mkdtemp(prefix="transport-tests-")
    try:
        ca_file, server_pair, misnamed_pair = make_certificates(directory)
        plain = Server(("127.0.0.1", 0), Handler)
        secure = Server(("127.0.0.1", 0), Handler)
        misnamed = Server(("127.0.0.1", 0), Handler)
        for server, (cert_file, key_file) in ((secure, server_pair), (misnamed, misnamed_pair)):
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert_file, key_file)
            # The handshake happens in the connection's own thread, not in accept().
            server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        for server in (plain, secure, misnamed):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        print(f"READY {plain.server_address[1]} {secure.server_address[1]} {ca_file} {misnamed.server_address[1]}",
              flush=True)
        sys.stdin.buffer.read()  # returns when the test process closes our stdin or dies
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        os._exit(0)


if __name__ == "__main__":
    main()
