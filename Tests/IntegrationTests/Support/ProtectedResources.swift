import Foundation
import OAuth2
import Testing

/// The provider's protected resources with RFC 9728 metadata, and what it
/// records of a client that configures itself (Tests/Provider/README.md:
/// provider/resources.py, /test/discovery-requests), read from the same
/// env.json as ``Provider``.
struct ProtectedResources: Decodable, Sendable {
    /// One resource at `<origin>/res/<name>`.
    struct Resource: Decodable, Sendable {
        /// Its identifier (RFC 9728 `resource`).
        let resource: String
        /// 200 with a token of this resource that has `read`.
        let hello: String
        /// 403 `insufficient_scope` with `scope="admin"` until the token has `admin`.
        let admin: String
        /// `insufficient_scope` on every request.
        let insufficientAlways: String

        enum CodingKeys: String, CodingKey {
            case resource, hello, admin
            case insufficientAlways = "insufficient_always"
        }
    }

    struct Endpoints: Decodable, Sendable {
        let registration: String
        let testDiscoveryRequests: String
        let testTokenRequests: String
        let testCIMDTrust: String

        enum CodingKeys: String, CodingKey {
            case registration
            case testDiscoveryRequests = "test_discovery_requests"
            case testTokenRequests = "test_token_requests"
            case testCIMDTrust = "test_cimd_trust"
        }
    }

    let issuer: String
    let endpoints: Endpoints
    let resources: [String: Resource]

    /// The main provider's (`OAUTH2_IT_PROVIDER`); a provider without the
    /// resources of issue 38 fails the test, it does not skip it.
    static func main() throws -> ProtectedResources {
        try load("OAUTH2_IT_PROVIDER")
    }

    /// The rotating provider's (`OAUTH2_IT_ROTATE_PROVIDER`, ``Provider/rotate()``).
    static func rotate() throws -> ProtectedResources {
        try load("OAUTH2_IT_ROTATE_PROVIDER")
    }

    private static func load(_ variable: String) throws -> ProtectedResources {
        let path = ProcessInfo.processInfo.environment[variable] ?? ""
        do {
            return try JSONDecoder().decode(ProtectedResources.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ProviderError(description: "\(variable)=\(path) has no protected resources (RFC 9728) in its env.json: \(error)")
        }
    }

    /// The resource named `name` (`a`, `b`, `quiet`).
    func resource(_ name: String) throws -> Resource {
        guard let resource = resources[name] else { throw ProviderError(description: "the provider has no resource \(name)") }
        return resource
    }

    /// One metadata or registration request the provider answered.
    struct DiscoveryRequest: Decodable, Equatable, Sendable {
        let method: String
        let url: String
        let status: Int
    }

    /// Every metadata and registration request the provider answered so far, in order.
    func discoveryRequests() async throws -> [DiscoveryRequest] {
        struct Answer: Decodable { let requests: [DiscoveryRequest] }
        return try JSONDecoder().decode(Answer.self, from: try await Self.get(endpoints.testDiscoveryRequests)).requests
    }

    /// The token requests of the client `clientID`, each with its `resource` parameters.
    func tokenRequests(clientID: String) async throws -> [TokenRequest] {
        struct Answer: Decodable { let requests: [TokenRequest] }
        let query = clientID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? clientID
        return try JSONDecoder().decode(Answer.self, from: try await Self.get(endpoints.testTokenRequests + "?client_id=" + query)).requests
    }

    /// A token request as the provider logged it.
    struct TokenRequest: Decodable, Sendable {
        let grantType: String?
        let status: Int
        let resource: [String]?

        enum CodingKeys: String, CodingKey {
            case grantType = "grant_type"
            case status, resource
        }
    }

    /// Makes the provider trust `caPEM` for client ID metadata documents on 127.0.0.1.
    func trustForClientMetadata(_ caPEM: Data) async throws {
        var request = HTTPTransportRequest(method: .post, url: try #require(URL(string: endpoints.testCIMDTrust)))
        request.headers.append(HTTPField(name: .contentType, value: "application/x-pem-file"))
        request.body = caPEM
        let response = try await Provider.send(request)
        guard response.status == 200 else {
            throw ProviderError(
                description: "/test/cimd-trust answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    private static func get(_ url: String) async throws -> Data {
        let response = try await Provider.send(HTTPTransportRequest(url: try #require(URL(string: url))))
        guard response.status == 200 else { throw ProviderError(description: "\(url) answered \(response.status)") }
        return response.body
    }
}

extension Subprocess {
    /// The stdout line at `index` (0 is the first), once the child has written it.
    func lineOfStdout(_ index: Int, timeout: Duration = .seconds(30)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let lines = stdout.split(separator: "\n", omittingEmptySubsequences: false)
            // The last piece is a line still being written.
            if lines.count > index + 1 { return String(lines[index]) }
            guard ContinuousClock.now < deadline, isRunning || lines.count > index + 1 else {
                throw ProviderError(description: "no stdout line \(index) after \(timeout)\nstdout: \(stdout)\nstderr: \(stderr)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Client ID metadata documents served over https on 127.0.0.1 by the test
/// itself, with a throw-away CA that the provider is told to trust through
/// /test/cimd-trust: python3's http.server, and openssl for the CA.
///
/// Started and waited for without blocking a thread (the tests run on the
/// cooperative pool, two threads on a two-core machine); ``stop()`` ends it,
/// and the child is killed when the value goes away if a test failed first.
final class ClientMetadataDocumentServer: @unchecked Sendable { // the process is stopped once; the rest is immutable
    let directory: URL
    let port: Int
    private let process: Subprocess

    /// Makes a CA and a certificate for 127.0.0.1 with openssl, then serves
    /// `<directory>/www` over https; prints the port.
    private static let script = """
        import http.server, os, ssl, subprocess, sys
        os.chdir(sys.argv[1])
        def run(*a): subprocess.run(a, check=True, capture_output=True)
        run('openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key',
            '-out', 'ca.pem', '-days', '1', '-subj', '/CN=cimd-test CA', '-addext', 'basicConstraints=critical,CA:TRUE',
            '-addext', 'keyUsage=critical,keyCertSign')
        run('openssl', 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'leaf.key',
            '-out', 'leaf.csr', '-subj', '/CN=127.0.0.1')
        open('ext', 'w').write('subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n')
        run('openssl', 'x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem',
            '-days', '1', '-extfile', 'ext')
        os.makedirs('www', exist_ok=True)
        os.chdir('www')
        class Quiet(http.server.SimpleHTTPRequestHandler):
            extensions_map = {".json": "application/json"}
            def log_message(self, *a): pass
        httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Quiet)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain('../leaf.pem', '../leaf.key')
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        print(httpd.server_address[1], flush=True)
        httpd.serve_forever()
        """

    private init(directory: URL, port: Int, process: Subprocess) {
        self.directory = directory
        self.port = port
        self.process = process
    }

    /// Starts a server with its own CA.
    static func start() async throws -> ClientMetadataDocumentServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cimd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = try Subprocess(
            "/usr/bin/env", ["python3", "-c", script, directory.path], environment: ProcessInfo.processInfo.environment)
        let line = try await process.firstLineOfStdout()
        guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            _ = try? await process.killHard()
            throw ProviderError(description: "the client metadata document server did not start: \(process.stderr)")
        }
        return ClientMetadataDocumentServer(directory: directory, port: port, process: process)
    }

    /// The URL of the document `name` (also the client id it names).
    func url(_ name: String = "oauth-client.json") -> String { "https://127.0.0.1:\(port)/\(name)" }

    /// Serves `json` as the document `name`.
    func serve(_ json: Data, as name: String = "oauth-client.json") throws {
        try json.write(to: directory.appendingPathComponent("www/\(name)"))
    }

    /// The CA that signed the server's certificate, PEM.
    var caPEM: Data { (try? Data(contentsOf: directory.appendingPathComponent("ca.pem"))) ?? Data() }

    /// Stops the server and removes its files.
    func stop() async {
        _ = try? await process.killHard()
        try? FileManager.default.removeItem(at: directory)
    }
}
