import Foundation
import HTTPTypes
import OAuth2
import OAuth2Loopback
import Synchronization
import Testing

@testable import MCPClientCore

/// The MCP server of Tests/MCPServer (the official Python SDK, protected by
/// the local provider), as scripts/mcp-server.sh describes it in env.json.
struct MCPServerEnvironment: Sendable {
    let url: URL
    let resource: String
    let username: String
    let password: String
    let browser: String
    /// The provider's record of token requests (Tests/Provider/README.md).
    let tokenRequests: URL?

    /// From OAUTH2_IT_MCP_SERVER (the path of the server's env.json), or nil.
    static let current = load("OAUTH2_IT_MCP_SERVER")
    /// A second server behind the same provider, from OAUTH2_IT_MCP_SERVER_B.
    static let second = load("OAUTH2_IT_MCP_SERVER_B")

    static func load(_ variable: String) -> MCPServerEnvironment? {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty,
            let server = json(at: path), let url = (server["url"] as? String).flatMap(URL.init(string:)),
            let resource = server["resource"] as? String, let providerPath = server["provider_env"] as? String,
            let provider = json(at: providerPath), let browser = provider["browser"] as? String,
            let alice = (provider["users"] as? [String: Any])?["alice"] as? [String: Any],
            let username = alice["username"] as? String, let password = alice["password"] as? String
        else { return nil }
        let tokenRequests = ((provider["endpoints"] as? [String: Any])?["test_token_requests"] as? String).flatMap(URL.init(string:))
        return MCPServerEnvironment(
            url: url, resource: resource, username: username, password: password, browser: browser, tokenRequests: tokenRequests)
    }

    static var isConfigured: Bool { current != nil }

    private static func json(at path: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}

/// The user's browser: the repository's scripted one (Tests/Provider/browser.py)
/// signs in as alice, consents, and follows the redirect to the loopback receiver.
final class ScriptedBrowser: Sendable {
    let environment: MCPServerEnvironment
    let opened = Mutex<[URL]>([])
    let failures = Mutex<[String]>([])

    init(_ environment: MCPServerEnvironment) {
        self.environment = environment
    }

    func handler() throws -> LoopbackRedirectHandler {
        try LoopbackRedirectHandler(redirectURI: URL(string: "http://127.0.0.1/callback")!, timeout: .seconds(60)) { url in
            self.open(url)
        }
    }

    func open(_ url: URL) {
        opened.withLock { $0.append(url) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: environment.browser)
        process.arguments = [url.absoluteString, "--username", environment.username, "--password", environment.password, "--follow"]
        process.standardOutput = FileHandle.nullDevice
        process.terminationHandler = { process in
            if process.terminationStatus != 0 {
                self.failures.withLock { $0.append("the scripted browser exited with \(process.terminationStatus)") }
            }
        }
        do {
            try process.run()
        } catch {
            failures.withLock { $0.append("the scripted browser did not start: \(error)") }
        }
    }
}

/// The network under the library, recording what it was asked for.
final class RecordingTransport: HTTPTransport {
    let inner = CurlTransport()
    let recorded = Mutex<[URL]>([])
    var urls: [URL] { recorded.withLock { $0 } }

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        recorded.withLock { $0.append(request.url) }
        return try await inner.send(request)
    }
}

/// A redirect handler that must not be used: a run that has what it needs
/// sends nobody to sign in.
struct NoSignIn: AuthorizationRedirectHandler {
    var redirectURI: URL { URL(string: "http://127.0.0.1/callback")! }
    func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
        Issue.record("a sign-in was started: \(pending.url)")
        throw OAuth2Error(code: .invalidConfiguration, message: "no sign-in expected")
    }
}

@Suite(
    .enabled(
        if: MCPServerEnvironment.isConfigured, "needs the MCP server: scripts/test-mcp-example.sh starts it and sets OAUTH2_IT_MCP_SERVER"),
    .serialized)
struct MCPServerWitnessTests {
    let environment = MCPServerEnvironment.current!

    func identity() -> ClientIdentity {
        // What an MCP client does: register itself (RFC 7591) when the server
        // offers it; the provider's pre-registered public client otherwise.
        ClientIdentity(
            registrationMetadata: ClientMetadata(
                redirectURIs: [URL(string: "http://127.0.0.1/callback")!], clientName: "swift-oauth2 MCP example test"))
    }

    @Test func initializeAndAToolCallSucceedAfterOneSignInAndTheNextRunNeedsNone() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mcp-example-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileTokenStore(directory: directory.path)
        let browser = ScriptedBrowser(environment)

        let first = try ProtectedResourceAuthorizer(
            identity: identity(), redirectHandler: try browser.handler(), store: store, transport: CurlTransport())
        let result = try await callTool(at: environment.url, authorizer: first, tool: "whoami")
        #expect(browser.failures.withLock { $0 }.isEmpty)
        #expect(browser.opened.withLock { $0.count } == 1, "one browser trip")
        #expect(result.serverName == "swift-oauth2 witness")
        #expect(!result.isError)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any])
        #expect(answer["username"] as? String == environment.username)
        // The server accepted the token because the provider bound it to this
        // endpoint (RFC 8707): the client sent `resource`.
        #expect(answer["resource"] as? String == environment.resource)
        let authorize = try #require(browser.opened.withLock { $0.first })
        let query = URLComponents(url: authorize, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "resource" }?.value == environment.resource)
        #expect(query.first { $0.name == "code_challenge_method" }?.value == "S256")
        // And on the code exchange (RFC 8707 §2.2), as the provider recorded it.
        let clientID = try #require(answer["client_id"] as? String)
        let exchanges = try await tokenRequests(of: clientID)
        #expect(exchanges.map { $0["grant_type"] as? String } == ["authorization_code"])
        #expect(exchanges.first?["resource"] as? [String] == [environment.resource])

        // A new process: a new client on the same store. No sign-in, and its
        // requests are signed from the first one.
        let reopened = try FileTokenStore(directory: directory.path)
        let network = RecordingTransport()
        let second = try ProtectedResourceAuthorizer(
            identity: identity(), redirectHandler: NoSignIn(), store: reopened, transport: network)
        let again = try await callTool(at: environment.url, authorizer: second, tool: "whoami")
        let answerAgain = try #require(try JSONSerialization.jsonObject(with: Data(again.text.utf8)) as? [String: Any])
        #expect(answerAgain["username"] as? String == environment.username)
        // No round trip to discovery, registration or the token endpoint, and
        // the server refused nothing: the first request went out signed.
        #expect(network.urls.isEmpty, "the second run fetched \(network.urls)")
        #expect(second.challengesHandled.withLock { $0 } == 0)
        #expect(first.challengesHandled.withLock { $0 } == 1)
    }

    /// The token requests the provider saw from `clientID`.
    func tokenRequests(of clientID: String) async throws -> [[String: Any]] {
        let base = try #require(environment.tokenRequests)
        var components = try #require(URLComponents(url: base, resolvingAgainstBaseURL: false))
        components.queryItems = [URLQueryItem(name: "client_id", value: clientID)]
        let response = try await CurlTransport().send(HTTPTransportRequest(url: try #require(components.url)))
        let body = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        return body["requests"] as? [[String: Any]] ?? []
    }

    @Test(.enabled(if: MCPServerEnvironment.second != nil, "needs a second MCP server (OAUTH2_IT_MCP_SERVER_B)"))
    func twoEndpointsBehindOneServerGetTwoTokensAndEachRefusesTheOthers() async throws {
        let other = try #require(MCPServerEnvironment.second)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mcp-example-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileTokenStore(directory: directory.path)
        let browser = ScriptedBrowser(environment)
        let authorizer = try ProtectedResourceAuthorizer(
            identity: identity(), redirectHandler: try browser.handler(), store: store, transport: CurlTransport())

        let first = try await callTool(at: environment.url, authorizer: authorizer, tool: "whoami")
        let second = try await callTool(at: other.url, authorizer: authorizer, tool: "whoami")
        #expect(browser.opened.withLock { $0.count } == 2, "one sign-in per resource")
        let firstAnswer = try #require(try JSONSerialization.jsonObject(with: Data(first.text.utf8)) as? [String: Any])
        let secondAnswer = try #require(try JSONSerialization.jsonObject(with: Data(second.text.utf8)) as? [String: Any])
        #expect(firstAnswer["resource"] as? String == environment.resource)
        #expect(secondAnswer["resource"] as? String == other.resource)

        // Each token, sent by hand to the other server, is refused there: the
        // provider bound it to its own resource, and the Python SDK checks that.
        let tokenA = try #require(authorizer.authorizationHeader(for: environment.url))
        let tokenB = try #require(authorizer.authorizationHeader(for: other.url))
        #expect(tokenA != tokenB)
        for (token, url) in [(tokenA, other.url), (tokenB, environment.url)] {
            var request = HTTPTransportRequest(method: .post, url: url, body: Data(Self.initialize.utf8))
            request.headers[.authorization] = token
            request.headers[.contentType] = "application/json"
            request.headers[.accept] = "application/json, text/event-stream"
            let response = try await CurlTransport().send(request)
            #expect(response.status == .unauthorized)
        }
    }

    static let initialize =
        #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#

    @Test func withoutASignInTheSDKGetsTheLibrarysError() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mcp-example-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let authorizer = try ProtectedResourceAuthorizer(
            identity: identity(), redirectHandler: nil, store: try FileTokenStore(directory: directory.path), transport: CurlTransport())
        await #expect(throws: (any Error).self) {
            _ = try await callTool(at: environment.url, authorizer: authorizer, tool: "whoami")
        }
        // The resource named its metadata, the client discovered it, and only
        // then found it had nobody to send the user to: the library's typed error.
        #expect(authorizer.lastError?.code == .authorizationRequired)
    }
}

@Suite struct MCPServerRequirementTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MCP_EXAMPLE_REQUIRE_SERVER"] == "1"))
    func theServerIsThereWhenRequired() {
        #expect(MCPServerEnvironment.isConfigured, "OAUTH2_IT_MCP_SERVER does not name a readable env.json of a server and its provider")
    }
}
