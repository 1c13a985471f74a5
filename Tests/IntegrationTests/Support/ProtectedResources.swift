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
        let path = ProcessInfo.processInfo.environment["OAUTH2_IT_PROVIDER"] ?? ""
        do {
            return try JSONDecoder().decode(ProtectedResources.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ProviderError(description: "OAUTH2_IT_PROVIDER=\(path) has no protected resources (RFC 9728) in its env.json: \(error)")
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
    func trustForClientMetadata(_ caPEM: String) async throws {
        var request = HTTPTransportRequest(method: .post, url: try #require(URL(string: endpoints.testCIMDTrust)))
        request.headers.append(HTTPField(name: .contentType, value: "application/x-pem-file"))
        request.body = Data(caPEM.utf8)
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

/// A client ID metadata document served over https on 127.0.0.1 by the test
/// itself, with a throw-away CA (the provider is told to trust it through
/// /test/cimd-trust): python3's http.server, one document.
final class ClientMetadataDocumentServer: @unchecked Sendable { // the process is only stopped once, from deinit
    let directory: URL
    let port: Int
    private let process: Process

    /// The document's URL, which is also the client id.
    var documentURL: String { "https://127.0.0.1:\(port)/oauth-client.json" }

    /// The CA that signed the server's certificate, PEM.
    var caPEM: String { (try? String(contentsOf: directory.appendingPathComponent("ca.pem"), encoding: .utf8)) ?? "" }

    /// Starts the server; `document` gets the document's URL and returns its JSON.
    init(document: (String) -> String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cimd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Self.shell(
            """
            set -e
            ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=cimd-test-ca \
                -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
            openssl req $ec -keyout server.key -out server.csr -subj /CN=127.0.0.1
            printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
            mkdir www
            """, in: directory)
        let portFile = directory.appendingPathComponent("port")
        let script = """
            import http.server, ssl, sys, os
            os.chdir(sys.argv[1] + "/www")
            class Handler(http.server.SimpleHTTPRequestHandler):
                extensions_map = {".json": "application/json"}
                def log_message(self, *args): pass
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[1] + "/server.pem", sys.argv[1] + "/server.key")
            server.socket = context.wrap_socket(server.socket, server_side=True)
            open(sys.argv[1] + "/port.tmp", "w").write(str(server.server_address[1]))
            os.rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
            server.serve_forever()
            """
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, directory.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var port = 0
        for _ in 0..<400 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), let value = Int(text) {
                port = value
                break
            }
            Thread.sleep(forTimeInterval: 0.025)
        }
        guard port > 0 else {
            process.terminate()
            throw ProviderError(description: "the client metadata document server did not start")
        }
        self.port = port
        let url = "https://127.0.0.1:\(port)/oauth-client.json"
        try Data(document(url).utf8).write(to: directory.appendingPathComponent("www/oauth-client.json"))
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    private static func shell(_ script: String, in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ProviderError(description: "openssl failed making the test CA") }
    }
}
