import ChildProcesses
import Foundation
import LoopbackSockets
import Testing

/// Debian's nginx asking every client for a certificate (`ssl_verify_client
/// optional_no_ca`): a token endpoint (`/token`) whose access token names
/// the certificate it saw (`at-` and its SHA-1), and everywhere else a
/// resource answering with what it saw of the request. The independent TLS
/// server the transport's and the CLI's mutual TLS tests run against.
///
/// A throw-away CA, a server certificate for 127.0.0.1 and two client
/// certificates (one issued by the CA, one self-signed) are made with the
/// openssl CLI. nginx runs in the foreground under a shell that stops it
/// when its stdin closes, so it cannot outlive the test process.
public final class MutualTLSServer: Sendable {
    /// The port nginx listens on at 127.0.0.1.
    public let port: Int
    /// The folder of nginx's configuration, logs, and the certificates.
    public let directory: URL
    /// The PEM file of the CA that issued the server's certificate.
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }
    private let process: ChildProcess

    /// The server of the running suite (see ``MutualTLSServerTrait``).
    @TaskLocal public static var current: MutualTLSServer?

    private init(port: Int, directory: URL, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// A client certificate the tests present: its files and what openssl says of it.
    public struct Client: Sendable {
        /// The certificate's PEM file.
        public let certificateFile: String
        /// The private key's PEM file.
        public let keyFile: String
        /// `openssl x509 -fingerprint -sha1`, lowercase hex without colons: nginx's `$ssl_client_fingerprint`.
        public let sha1: String
        /// `openssl x509 -fingerprint -sha256`, as base64url: RFC 8705's `x5t#S256`.
        public let sha256: String
    }

    /// The client certificate the CA issued.
    public var issued: Client { client("issued") }
    /// A self-signed client certificate.
    public var selfSigned: Client { client("self") }

    private func client(_ name: String) -> Client {
        let path = directory.appendingPathComponent(name).path
        let sha1 = (try? String(contentsOfFile: path + ".sha1", encoding: .utf8)) ?? ""
        let sha256 = (try? String(contentsOfFile: path + ".sha256", encoding: .utf8)) ?? ""
        return Client(
            certificateFile: path + ".pem", keyFile: path + ".key", sha1: sha1.trimmingCharacters(in: .whitespacesAndNewlines),
            sha256: sha256.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// An HTTPS URL on the server.
    public func url(_ path: String) throws -> URL {
        guard let url = URL(string: "https://127.0.0.1:\(port)\(path)") else { throw MutualTLSServerError.badPath(path) }
        return url
    }

    /// Makes the certificates and starts nginx, ready once it accepts connections.
    public static func start() throws -> MutualTLSServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try makeCertificates(in: directory)
        let port = try LoopbackSocket.closedPort()
        let conf = configuration(directory: directory.path, port: port)
        try conf.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)

        // nginx in the foreground; the shell kills it once `stop` asks (a file
        // `stop`) or the test process is gone. (Without a master process, nginx
        // does not stop on SIGTERM while connections linger; it has nothing to save.)
        let arguments = [
            "-c",
            """
            /usr/sbin/nginx -e "$1/error.log" -p "$1" -c "$1/nginx.conf" </dev/null & pid=$!
            while [ ! -e "$1/stop" ] && kill -0 "$2" 2>/dev/null; do sleep 0.1; done
            kill -9 $pid; wait $pid
            """,
            "sh", directory.path, String(ProcessInfo.processInfo.processIdentifier),
        ]
        let process = try ChildProcess("/bin/sh", arguments, stdin: .pipe, stdout: .null, stderr: .null)
        let server = MutualTLSServer(port: port, directory: directory, process: process)
        // Ready once it accepts connections.
        for _ in 0..<200 {
            if canConnect(port: port) { return server }
            Thread.sleep(forTimeInterval: 0.025)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        server.stop()
        throw MutualTLSServerError.didNotStart("nginx: \(log)")
    }

    /// Stops nginx and removes its folder.
    public func stop() {
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("stop").path, contents: nil)
        process.input?.close()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// What the resource answers: the certificate it saw on the request's
    /// connection, and the request's `Authorization`.
    public struct Seen: Decodable, Equatable, Sendable {
        /// `SUCCESS`, `NONE`, or `FAILED:…` (`$ssl_client_verify`).
        public var verify: String
        /// SHA-1 of the client certificate, hex (`$ssl_client_fingerprint`); empty without one.
        public var fingerprint: String
        /// `r` when the TLS session was resumed, `.` when not (`$ssl_session_reused`).
        public var reused: String
        /// The connection's serial number (`$connection`).
        public var connection: String
        /// The request's `Authorization` (`$http_authorization`); empty without one.
        public var authorization: String
    }

    /// The lines of the access log that name `path`.
    public func accessLogLines(path: String) -> [Substring] {
        let log = (try? String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.contains(path) }
    }

    private static func configuration(directory: String, port: Int) -> String {
        """
        worker_processes 1;
        daemon off;
        master_process off;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log;
        events { worker_connections 256; }
        http {
            access_log \(directory)/access.log;
            client_body_temp_path \(directory)/body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            keepalive_requests 10000;
            server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(directory)/server.pem;
                ssl_certificate_key \(directory)/server.key;
                ssl_verify_client optional_no_ca;
                ssl_session_cache shared:mtls:1m;
                ssl_session_tickets on;
                location /token {
                    default_type application/json;
                    return 200 '{"access_token":"at-$ssl_client_fingerprint","token_type":"Bearer","expires_in":3600}';
                }
                location / {
                    default_type application/json;
                    return 200 '{"verify":"$ssl_client_verify","fingerprint":"$ssl_client_fingerprint","reused":"$ssl_session_reused","connection":"$connection","authorization":"$http_authorization"}';
                }
            }
        }
        """
    }

    private static func makeCertificates(in directory: URL) throws {
        let script = """
            set -e
            ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=mtls-test-ca \
                -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
            openssl req $ec -keyout server.key -out server.csr -subj /CN=127.0.0.1
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
            openssl req $ec -keyout issued.key -out issued.csr -subj /CN=client-issued
            printf 'extendedKeyUsage=clientAuth\\n' > client.ext
            openssl x509 -req -in issued.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out issued.pem -days 2 -extfile client.ext
            openssl req -x509 $ec -keyout self.key -out self.pem -days 2 -subj /CN=client-self-signed
            chmod 600 issued.key self.key
            for name in issued self; do
                openssl x509 -in $name.pem -noout -fingerprint -sha1 | cut -d= -f2 | tr -d ':' | tr 'A-F' 'a-f' > $name.sha1
                openssl x509 -in $name.pem -outform DER | openssl dgst -sha256 -binary | openssl base64 -A \
                    | tr '+/' '-_' | tr -d '=' > $name.sha256
            done
            """
        let process = try ChildProcess("/bin/sh", ["-c", script], directory: directory.path, stdout: .null, stderr: .null)
        guard process.waitUntilExit() == .exited(0) else { throw MutualTLSServerError.didNotStart("openssl failed") }
    }

    private static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// Why the fixture could not serve.
public enum MutualTLSServerError: Error {
    /// openssl or nginx failed; what they said.
    case didNotStart(String)
    /// A path that makes no URL.
    case badPath(String)
    /// A test asked for the suite's nginx in a suite without ``MutualTLSServerTrait``.
    case notRunning
}

/// Runs a suite with one nginx, started before its first test and stopped after its last.
public struct MutualTLSServerTrait: SuiteTrait, TestScoping {
    /// What ``Trait/mutualTLSServer`` makes.
    public init() {}

    /// Starts nginx, runs the suite with it as ``MutualTLSServer/current``, and stops it.
    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let server = try MutualTLSServer.start()
        defer { server.stop() }
        try await MutualTLSServer.$current.withValue(server) {
            try await function()
        }
    }
}

extension Trait where Self == MutualTLSServerTrait {
    /// One nginx asking for client certificates, for the whole suite: `MutualTLSServer.current`.
    public static var mutualTLSServer: Self { Self() }
}

/// The nginx of the running suite.
public func currentMutualTLSServer() throws -> MutualTLSServer {
    guard let server = MutualTLSServer.current else { throw MutualTLSServerError.notRunning }
    return server
}
