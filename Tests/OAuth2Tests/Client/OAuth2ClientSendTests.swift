import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite struct OAuth2ClientSendTests {
    @Test func signsWithBearerHeaderOnly() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: "{\"name\":\"alice\"}", for: Fixture.apiURL)
        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(response.status == 200)
        let sent = try #require(harness.transport.requests.first)
        #expect(sent.authorization == "Bearer \(Fixture.accessToken)")
        #expect(!sent.url.absoluteString.contains(Fixture.accessToken))
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func replacesAnAuthorizationHeaderTheCallerSet() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL, headers: [.authorization: "Basic xyz"]))
        let sent = try #require(harness.transport.requests.first)
        #expect(sent.headers[values: .authorization] == ["Bearer \(Fixture.accessToken)"])
    }

    @Test func refusesToSendATokenOverPlainHTTP() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let error = await oauth2Error {
            _ = try await harness.client().send(HTTPTransportRequest(url: URL(string: "http://api.example/me")!))
        }
        #expect(error?.code == .insecureEndpoint)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func allowsPlainHTTPToLoopback() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let url = URL(string: "http://127.0.0.1:8080/me")!
        harness.transport.enqueue(json: "{}", for: url)
        let response = try await harness.client().send(HTTPTransportRequest(url: url))
        #expect(response.status == 200)
    }

    @Test func withoutATokenFailsAndAsksForAuthentication() async throws {
        let harness = try ClientHarness()
        let delegate = RecordingDelegate()
        let error = await oauth2Error { _ = try await harness.client(delegate: delegate).send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .notAuthenticated)
        #expect(delegate.events == [.needsAuthentication])
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func refreshesProactivelyInsideTheSkew() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 30)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-fresh-000000000000000", refresh: nil), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(harness.tokenRequests.count == 1)
        let api = try #require(harness.transport.requests(for: Fixture.apiURL).first)
        #expect(api.authorization == "Bearer at-fresh-000000000000000")
    }

    @Test func on401InvalidTokenRefreshesOnceAndRetriesOnce() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]), for: Fixture.apiURL)
        harness.transport.enqueue(
            json: Fixture.tokenJSON(access: "at-second-00000000000000", refresh: "rt-second-00000000000000"), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{\"ok\":true}", for: Fixture.apiURL)
        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(response.status == 200)
        let calls = harness.transport.requests(for: Fixture.apiURL)
        #expect(calls.map(\.authorization) == ["Bearer \(Fixture.accessToken)", "Bearer at-second-00000000000000"])
        #expect(harness.tokenRequests.count == 1)
        #expect(Fixture.formFields(harness.tokenRequests.first?.body)["grant_type"] == "refresh_token")
    }

    @Test func on401WithoutAnyChallengeRefreshesAndRetries() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 401), for: Fixture.apiURL)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-second-00000000000000"), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(response.status == 200)
        #expect(harness.tokenRequests.count == 1)
    }

    @Test func secondRejectionAfterARefreshLosesTheToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let delegate = RecordingDelegate()
        let rejection = HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer realm=\"api\", error=\"invalid_token\""])
        harness.transport.enqueue(rejection, for: Fixture.apiURL)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-second-00000000000000"), for: Fixture.tokenURL)
        harness.transport.enqueue(rejection, for: Fixture.apiURL)
        let client = harness.client(delegate: delegate)
        let error = await oauth2Error { _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .invalidToken)
        #expect(harness.transport.requests(for: Fixture.apiURL).count == 2)
        #expect(try await harness.store.load(account: "alice") == nil)
        #expect(delegate.events.last == .lostAccessToken(error))
        #expect(client.currentToken == nil)
    }

    @Test func insufficientScopeIsAnErrorAndNotRefreshed() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 403, headers: [.wwwAuthenticate: "Bearer error=\"insufficient_scope\", scope=\"admin\""]),
            for: Fixture.apiURL
        )
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .insufficientScope)
        #expect(error?.message.contains("admin") == true)
        #expect(harness.tokenRequests.isEmpty)
        #expect(try await harness.store.load(account: "alice") != nil)
    }

    @Test(arguments: [
        #"Bearer error="insufficient_scope", scope="admin r\\x wr\"ite caf\#u{E9} write""#,
        "Bearer error=\"insufficient_scope\", scope=\"admin \u{1B}]0;pwned\u{07} write\"",
    ])
    func aNeededScopeOutsideRFC6749sCharactersIsLeftOutOfTheMessage(challenge: String) async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 403, headers: [.wwwAuthenticate: challenge]), for: Fixture.apiURL)
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .insufficientScope)
        let message = error?.message ?? ""
        #expect(!message.contains("\u{1B}") && !message.contains("\\") && !message.contains("\"") && !message.contains("caf"), "\(message)")
        #expect(!message.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(message)")
        // A challenge the parser reads keeps its good scope tokens; one it cannot read names none.
        // (Control characters never reach the parser: swift-http-types makes them spaces, so
        // the second challenge reads "admin ]0;pwned write", three good tokens.)
        #expect(
            message.hasSuffix("(needs: admin write)") || message.hasSuffix("(needs: admin ]0;pwned write)") || message.hasSuffix("needs"),
            "\(message)")
    }

    @Test func otherErrorStatusesAreReturned() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 404), for: Fixture.apiURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 403), for: Fixture.apiURL)
        let client = harness.client()
        #expect(try await client.send(HTTPTransportRequest(url: Fixture.apiURL)).status == 404)
        #expect(try await client.send(HTTPTransportRequest(url: Fixture.apiURL)).status == 403)
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func nonBearerChallengeIsUnauthorizedWithoutRefresh() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Basic realm=\"x\""]), for: Fixture.apiURL)
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .unauthorized)
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func aSameOrigin307IsFollowedByDefaultWithItsMethodBodyAndToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let moved = URL(string: "https://api.example/v2/me")!
        harness.transport.enqueue(HTTPTransportResponse(status: 307, headers: [.location: "/v2/me"]), for: Fixture.apiURL)
        harness.transport.enqueue(json: #"{"ok": true}"#, for: moved)
        let request = HTTPTransportRequest(
            method: .post, url: Fixture.apiURL, headers: [.contentType: "application/json"], body: Data("{}".utf8))

        let response = try await harness.client().send(request)

        #expect(response.status == 200)
        let requests = harness.transport.requests
        #expect(requests.map(\.url) == [Fixture.apiURL, moved])
        #expect(requests.map(\.method) == [.post, .post])
        #expect(requests.last?.body == Data("{}".utf8))
        #expect(requests.last?.authorization == "Bearer \(Fixture.accessToken)")
        // The transport is never asked to follow: the client does it hop by hop.
        #expect(requests.allSatisfy { $0.redirects == .never })
    }

    @Test func a303TurnsAPostIntoAGetWithoutItsBody() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let result = URL(string: "https://api.example/v1/result")!
        harness.transport.enqueue(HTTPTransportResponse(status: 303, headers: [.location: result.absoluteString]), for: Fixture.apiURL)
        harness.transport.enqueue(json: "{}", for: result)
        let request = HTTPTransportRequest(
            method: .post, url: Fixture.apiURL, headers: [.contentType: "application/json"], body: Data("{}".utf8))

        _ = try await harness.client().send(request)

        let last = try #require(harness.transport.requests.last)
        #expect(last.method == .get)
        #expect(last.body == nil)
        #expect(!last.headers.contains(.contentType))
        #expect(last.authorization == "Bearer \(Fixture.accessToken)")
    }

    @Test func anotherPortIsAnotherOriginAndNeverSeesTheToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let otherPort = URL(string: "https://api.example:8443/v1/me")!
        harness.transport.enqueue(HTTPTransportResponse(status: 308, headers: [.location: otherPort.absoluteString]), for: Fixture.apiURL)
        harness.transport.enqueue(json: "{}", for: otherPort)

        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(harness.transport.requests(for: otherPort).first?.authorization == nil)
    }

    @Test func redirectsAreReturnedWhenTheRequestSaysNever() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 302, headers: [.location: "/v1/other"]), for: Fixture.apiURL)
        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL, redirects: .never))
        #expect(response.status == 302)
        #expect(harness.transport.requests.count == 1)
    }

    @Test func aRedirectLoopEndsAfterTenRedirectsWithATypedError() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        for _ in 0...SigningTransport.maxRedirects {
            harness.transport.enqueue(
                HTTPTransportResponse(status: 302, headers: [.location: Fixture.apiURL.absoluteString]), for: Fixture.apiURL)
        }
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .transportError)
        #expect(error?.message.contains("too many redirects") == true)
        #expect(harness.transport.requests.count == SigningTransport.maxRedirects + 1)
    }

    @Test(arguments: ["ftp://api.example/x", "file:///etc/passwd", "javascript:alert(1)"])
    func aRedirectToAnotherSchemeIsRefused(location: String) async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 302, headers: [.location: location]), for: Fixture.apiURL)
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .insecureRedirect)
        #expect(harness.transport.requests.count == 1)
    }

    @Test func aRejectedTokenAfterASameOriginRedirectIsRefreshedAndTheRequestRetriedFromItsStart() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let moved = URL(string: "https://api.example/v2/me")!
        harness.transport.enqueue(HTTPTransportResponse(status: 307, headers: [.location: moved.absoluteString]), for: Fixture.apiURL)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]), for: moved)
        harness.transport.enqueue(HTTPTransportResponse(status: 307, headers: [.location: moved.absoluteString]), for: Fixture.apiURL)
        harness.transport.enqueue(json: "{}", for: moved)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "fresh", refresh: "r-2"), for: Fixture.tokenURL)

        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(response.status == 200)
        #expect(harness.tokenRequests.count == 1)
        #expect(harness.transport.requests(for: moved).map(\.authorization) == ["Bearer \(Fixture.accessToken)", "Bearer fresh"])
    }

    @Test func tokenNeverFollowsARedirectToAnotherOrigin() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        harness.transport.enqueue(HTTPTransportResponse(status: 307, headers: [.location: "/v1/other"]), for: Fixture.apiURL)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 302, headers: [.location: elsewhere.absoluteString]),
            for: URL(string: "https://api.example/v1/other")!)
        harness.transport.enqueue(json: "{}", for: elsewhere)
        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL, redirects: .follow))
        #expect(response.status == 200)
        let requests = harness.transport.requests
        #expect(requests.count == 3)
        #expect(requests[1].authorization == "Bearer \(Fixture.accessToken)")
        #expect(requests[2].url == elsewhere)
        #expect(requests[2].authorization == nil)
    }

    @Test func a401FromARedirectTargetThatNeverSawTheTokenIsReturnedAsIs() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        harness.transport.enqueue(HTTPTransportResponse(status: 302, headers: [.location: elsewhere.absoluteString]), for: Fixture.apiURL)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]), for: elsewhere)
        let delegate = RecordingDelegate()

        let response = try await harness.client(delegate: delegate).send(HTTPTransportRequest(url: Fixture.apiURL, redirects: .follow))

        #expect(response.status == 401)
        #expect(harness.tokenRequests.isEmpty)
        #expect(harness.transport.requests(for: elsewhere).first?.authorization == nil)
        #expect(try await harness.store.load(account: "alice")?.accessToken.value == Fixture.accessToken)
        #expect(delegate.events.isEmpty)
    }

    @Test(arguments: ["http://api.example/v1/me", "http://elsewhere.example/x"])
    func redirectFromHTTPSToHTTPIsRefusedByDefault(location: String) async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 301, headers: [.location: location]), for: Fixture.apiURL)
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .insecureRedirect)
        #expect(harness.transport.requests.count == 1)
    }

    @Test func transportFailuresBecomeTypedErrors() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(error: HTTPTransportError.timeout, for: Fixture.apiURL)
        harness.transport.enqueue(error: HTTPTransportError.tlsFailed, for: Fixture.apiURL)
        harness.transport.enqueue(error: HTTPTransportError.connectFailed, for: Fixture.apiURL)
        let client = harness.client()
        #expect(await oauth2Error { _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }?.code == .timeout)
        #expect(await oauth2Error { _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }?.code == .tlsError)
        #expect(await oauth2Error { _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }?.code == .transportError)
    }
}
