import Foundation
import HTTPTypes
import OAuth2
import OAuth2OpenAPI
import OAuth2Testing
import OpenAPIRuntime
import Testing

/// ``OAuth2Middleware`` without a network: the generated client over
/// ``HTTPTransportClientTransport`` over a `CannedTransport` that plays the API, or
/// the middleware called directly with a `next` that records what it got.
struct OAuth2MiddlewareTests {
    let server = URL(string: "https://api.example/v1")!
    let canned = CannedTransport()

    private func client(_ source: any TokenSource, serverURL: URL? = nil) -> Client {
        Client(
            serverURL: serverURL ?? server,
            transport: HTTPTransportClientTransport(canned),
            middlewares: [OAuth2Middleware(tokenSource: source, serverURL: server)]
        )
    }

    private func challenge(_ error: String, scope: String? = nil) -> HTTPTransportResponse {
        let scopePart = scope.map { ", scope=\"\($0)\"" } ?? ""
        return HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer realm=\"api\", error=\"\(error)\"\(scopePart)"])
    }

    private func code(_ error: (any Error)?) -> OAuth2Error.Code? {
        ((error as? ClientError)?.underlyingError as? OAuth2Error)?.code
    }

    @Test func aRequestToTheServerIsSignedWithTheSourcesToken() async throws {
        let source = ScriptedTokenSource("first")
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)

        let identity = try await client(source).getMe().ok.body.json

        #expect(identity.username == "alice")
        #expect(canned.requests.map { $0.headers[.authorization] } == ["Bearer first"])
        #expect(canned.requests.first?.url.absoluteString == "https://api.example/v1/api/me")
    }

    @Test func aRejectedTokenIsReplacedOnceAndTheRequestRetriedOnce() async throws {
        let source = ScriptedTokenSource("first", "second")
        canned.enqueue(challenge("invalid_token"))
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)

        let identity = try await client(source).getMe().ok.body.json

        #expect(identity.username == "alice")
        #expect(source.replacements == 1)
        #expect(canned.requests.map { $0.headers[.authorization] } == ["Bearer first", "Bearer second"])
    }

    @Test func aSecond401IsNotRetriedAgainAndLosesTheToken() async throws {
        let source = ScriptedTokenSource("first", "second", "third")
        canned.enqueue(challenge("invalid_token"))
        canned.enqueue(challenge("invalid_token"))
        canned.enqueue(json: #"{"username": "never asked for", "scope": "read"}"#)

        let error = await #expect(throws: ClientError.self) { _ = try await client(source).getMe() }

        #expect(code(error) == .invalidToken)
        #expect(canned.requests.count == 2)
        #expect(source.replacements == 1)
        #expect(source.rejectedAfterRefresh == [.invalidToken])
    }

    @Test func a401NamingInsufficientScopeIsNotRefreshedNorRetried() async throws {
        let source = ScriptedTokenSource("first", "second")
        canned.enqueue(challenge("insufficient_scope", scope: "admin"))

        let error = await #expect(throws: ClientError.self) { _ = try await client(source).getAdmin() }

        #expect(code(error) == .insufficientScope)
        #expect(canned.requests.count == 1)
        #expect(source.replacements == 0)
    }

    @Test func aFailedRefreshIsTheSourcesTypedError() async throws {
        let source = ScriptedTokenSource("only")
        canned.enqueue(challenge("invalid_token"))

        let error = await #expect(throws: ClientError.self) { _ = try await client(source).getMe() }

        #expect(code(error) == .reauthorizationRequired)
        #expect(canned.requests.count == 1)
    }

    @Test func aServerURLOnAnotherOriginIsSentWithoutAToken() async throws {
        let source = ScriptedTokenSource("first")
        // Same host and scheme, another port: another origin.
        let elsewhere = try #require(URL(string: "https://api.example:8443/v1"))
        canned.enqueue(HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer realm=\"api\""]))

        let output = try await client(source, serverURL: elsewhere).getMe()

        guard case .unauthorized = output else {
            Issue.record("expected the documented 401, got \(output)")
            return
        }
        #expect(canned.requests.count == 1)
        #expect(canned.requests.first?.url.port == 8443)
        #expect(canned.requests.first?.headers[.authorization] == nil)
        #expect(source.requests == 0, "no token is even asked for")
    }

    @Test func theTokenIsNotSentOverPlainHTTPToAnotherHost() async throws {
        let source = ScriptedTokenSource("first")
        let plain = try #require(URL(string: "http://api.example"))
        let client = Client(
            serverURL: plain, transport: HTTPTransportClientTransport(canned),
            middlewares: [OAuth2Middleware(tokenSource: source, serverURL: plain)])

        let error = await #expect(throws: ClientError.self) { _ = try await client.getMe() }

        #expect(code(error) == .insecureEndpoint)
        #expect(canned.requests.isEmpty)
    }

    @Test func theCallersOwnAuthorizationIsKeptAndNotRetried() async throws {
        let source = ScriptedTokenSource("first", "second")
        let middleware = OAuth2Middleware(tokenSource: source, serverURL: server)
        var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/api/me")
        request.headerFields[.authorization] = "Basic dXNlcjpwYXNz"
        let seen = LockedValue<[String?]>([])

        let (response, _) = try await middleware.intercept(request, body: nil, baseURL: server, operationID: "getMe") {
            request, body, _ in
            seen.withLock { $0.append(request.headerFields[.authorization]) }
            return (HTTPResponse(status: .unauthorized), nil)
        }

        #expect(response.status == .unauthorized)
        #expect(seen.withLock { $0 } == ["Basic dXNlcjpwYXNz"])
        #expect(source.requests == 0)
    }

    @Test func aBodyThatCanBeReadOnceIsBufferedAndSentAgainOnTheRetry() async throws {
        let source = ScriptedTokenSource("first", "second")
        // The `next` below answers itself, without following redirects.
        let middleware = OAuth2Middleware(tokenSource: source, serverURL: server, nextHopFollowsRedirects: false)
        let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/api/echo")
        let (stream, continuation) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        continuation.yield(ArraySlice("{\"message\": ".utf8))
        continuation.yield(ArraySlice("\"once\", \"count\": 1}".utf8))
        continuation.finish()
        let body = HTTPBody(stream, length: .unknown)
        #expect(body.iterationBehavior == .single)
        let seen = LockedValue<[String]>([])

        let (response, _) = try await middleware.intercept(request, body: body, baseURL: server, operationID: "echo") {
            request, body, _ in
            let text = try await String(collecting: try #require(body), upTo: 1024)
            let attempt = seen.withLock { seen in
                seen.append(text)
                return seen.count
            }
            if attempt == 1 {
                return (
                    HTTPResponse(
                        status: .unauthorized, headerFields: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]),
                    nil
                )
            }
            return (HTTPResponse(status: .ok), nil)
        }

        #expect(response.status == .ok)
        #expect(seen.withLock { $0 } == [#"{"message": "once", "count": 1}"#, #"{"message": "once", "count": 1}"#])
    }

    @Test func aBodyThatCanBeReadOnceOverTheBufferLimitIsRefusedBeforeSending() async throws {
        let source = ScriptedTokenSource("first")
        let middleware = OAuth2Middleware(tokenSource: source, serverURL: server, maxBufferedBodySize: 8)
        let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/api/echo")
        let (stream, continuation) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        continuation.yield(ArraySlice("more than eight bytes".utf8))
        continuation.finish()
        let sent = LockedValue(0)

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await middleware.intercept(
                request, body: HTTPBody(stream, length: .unknown), baseURL: server, operationID: "echo"
            ) { _, _, _ in
                sent.withLock { $0 += 1 }
                return (HTTPResponse(status: .ok), nil)
            }
        }

        #expect(error?.code == .invalidConfiguration)
        #expect(sent.withLock { $0 } == 0)
    }

    @Test func whatTheNextHopThrowsArrivesAsItWasThrown() async throws {
        struct Unreachable: Error {}
        let source = ScriptedTokenSource("first")
        let middleware = OAuth2Middleware(tokenSource: source, serverURL: server)
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/api/me")

        await #expect(throws: Unreachable.self) {
            _ = try await middleware.intercept(request, body: nil, baseURL: server, operationID: "getMe") { _, _, _ in
                throw Unreachable()
            }
        }
    }

    @Test func aTransportFailureReachesTheCallerWithoutTheToken() async throws {
        let source = ScriptedTokenSource("secret-token-value")
        canned.enqueue(error: HTTPTransportError.timeout)

        let error = await #expect(throws: ClientError.self) { _ = try await client(source).getMe() }

        #expect(error?.underlyingError as? HTTPTransportError == .timeout)
        #expect(canned.requests.first?.headers[.authorization] == "Bearer secret-token-value")
        let described = String(describing: try #require(error)) + "\(String(reflecting: try #require(error)))"
        #expect(!described.contains("secret-token-value"))
    }

    // MARK: - Redirects the next hop follows on its own

    /// A generated client over a transport that follows redirects itself, as
    /// AsyncHTTPClient's and URLSession's do: the API moved to another origin,
    /// which answers 401 (it never saw the token).
    private func followingClient(_ source: any TokenSource, nextHopFollowsRedirects: Bool = true) -> Client {
        Client(
            serverURL: server,
            transport: FollowingClientTransport(canned),
            middlewares: [OAuth2Middleware(tokenSource: source, serverURL: server, nextHopFollowsRedirects: nextHopFollowsRedirects)]
        )
    }

    @Test func a401FromAnotherOriginAFollowingTransportWasRedirectedToCostsNoRefreshAndNoToken() async throws {
        let source = ScriptedTokenSource("first", "second", "third")
        let moved = URL(string: "https://elsewhere.example/api/me")!
        for _ in 0..<2 {
            canned.enqueue(
                HTTPTransportResponse(status: 302, headers: [.location: moved.absoluteString]),
                for: URL(string: "https://api.example/v1/api/me")!)
            canned.enqueue(challenge("invalid_token"), for: moved)
        }

        for _ in 0..<2 {
            let output = try await followingClient(source).getMe()
            guard case .unauthorized = output else {
                Issue.record("expected the 401 back, got \(output)")
                return
            }
        }

        #expect(source.replacements == 0)
        #expect(source.rejectedAfterRefresh.isEmpty)
    }

    @Test func overATransportThatReturnsRedirectsA401CountsAgain() async throws {
        let source = ScriptedTokenSource("first", "second")
        canned.enqueue(challenge("invalid_token"))
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)

        let identity = try await followingClient(source, nextHopFollowsRedirects: false).getMe().ok.body.json

        #expect(identity.username == "alice")
        #expect(source.replacements == 1)
    }

    @Test func overHTTPTransportClientTransportA401FromARedirectsTargetIsReturnedNotActedOn() async throws {
        // The inner transport followed (as a CurlTransport told .follow does) and says where the answer came from.
        let source = ScriptedTokenSource("first", "second")
        let moved = URL(string: "https://elsewhere.example/api/me")!
        var answer = challenge("invalid_token")
        answer.url = moved
        canned.enqueue(answer)

        let output = try await client(source).getMe()

        guard case .unauthorized = output else {
            Issue.record("expected the 401 back, got \(output)")
            return
        }
        #expect(source.replacements == 0)
    }
}

/// A `ClientTransport` that follows redirects itself, up to five, sending
/// every field along (the way a naive follower does): the kind of next hop
/// that hides from the middleware which URL answered.
struct FollowingClientTransport: ClientTransport {
    let canned: CannedTransport

    init(_ canned: CannedTransport) {
        self.canned = canned
    }

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        var url = try #require(URL(string: baseURL.absoluteString + (request.path ?? "")))
        for _ in 0..<5 {
            let response = try await canned.send(HTTPTransportRequest(method: request.method, url: url, headers: request.headerFields))
            guard (300..<400).contains(response.status.code), let location = response.headers[.location] else {
                return (response.head, response.body.isEmpty ? nil : HTTPBody(response.body))
            }
            url = try #require(URL(string: location, relativeTo: url)?.absoluteURL)
        }
        throw HTTPTransportError.tooManyRedirects
    }
}
