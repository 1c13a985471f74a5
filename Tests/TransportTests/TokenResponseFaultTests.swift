import Foundation
import OAuth2
import Testing

/// The network failing around a token response, with the real transport and
/// a real client: the client holds an expired token with a refresh token in
/// a ``FileTokenStore``, and its token endpoint is a ``ScriptedServer``.
/// Whatever the failure, the client ends with a typed error and the stored
/// token, refresh token included, is the one it had.
@Suite(.timeLimit(.minutes(5))) struct TokenResponseFaultTests {
    static let newAccessToken = "at-new-fault-test"
    static let newRefreshToken = "rt-new-fault-test"
    static let tokenJSON =
        #"{"access_token":"\#(newAccessToken)","token_type":"Bearer","expires_in":3600,"refresh_token":"\#(newRefreshToken)","scope":"read"}"#

    /// Interim responses a server may send before the final one: `100
    /// Continue`, and `103 Early Hints` with fields of its own (one that
    /// would break the token response if it leaked into the final one).
    static let continueResponse = "HTTP/1.1 100 Continue\r\n\r\n"
    static let earlyHints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\nContent-Type: text/html\r\n\r\n"

    static let tokenForm = "access_token=\(newAccessToken)&token_type=Bearer&expires_in=3600&refresh_token=\(newRefreshToken)&scope=read"

    /// How the token response is framed.
    enum Framing: CaseIterable, CustomTestStringConvertible {
        case contentLength
        case chunked
        /// No length: the body ends when the connection does.
        case closeDelimited
        /// `100 Continue` and `103 Early Hints`, then a `Content-Length` response.
        case afterInterimResponses
        /// A form-encoded body (GitHub's quirk) without a length: unlike a
        /// JSON object, a form body cut short still parses.
        case closeDelimitedForm

        var response: String {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
            let json = TokenResponseFaultTests.tokenJSON
            switch self {
            case .contentLength:
                return head + "Content-Length: \(json.utf8.count)\r\n\r\n" + json
            case .chunked:
                let half = json.utf8.count / 2
                let (first, second) = (String(json.prefix(half)), String(json.dropFirst(half)))
                let chunks = [first, second].map { String($0.utf8.count, radix: 16) + "\r\n" + $0 + "\r\n" }.joined()
                return head + "Transfer-Encoding: chunked\r\n\r\n" + chunks + "0\r\n\r\n"
            case .closeDelimited:
                return head + "Connection: close\r\n\r\n" + json
            case .afterInterimResponses:
                return TokenResponseFaultTests.continueResponse + TokenResponseFaultTests.earlyHints
                    + Self.contentLength.response
            case .closeDelimitedForm:
                return "HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n\r\n"
                    + TokenResponseFaultTests.tokenForm
            }
        }

        /// Whether the first `count` of `total` bytes, followed by `ending`,
        /// may give the token: once the body is known to be whole. Without a
        /// length only a normal close ends the body, and then only a JSON
        /// object shows it is whole: a form body never does. A chunked body
        /// is whole once its last chunk arrived, before the final line break.
        func mayGiveTheToken(after count: Int, of total: Int, endedBy ending: Ending) -> Bool {
            switch self {
            case .contentLength, .afterInterimResponses: count == total
            case .chunked: count == total || (ending == .close && count >= total - 2)
            case .closeDelimited: count == total && ending == .close
            case .closeDelimitedForm: false
            }
        }

        /// Whether all of it, followed by `ending`, must give the token.
        func mustGiveTheToken(endedBy ending: Ending) -> Bool {
            self != .closeDelimitedForm && (self != .closeDelimited || ending == .close)
        }

        var testDescription: String { "\(self)" }
    }

    /// How the server ends the connection after its bytes.
    enum Ending: CaseIterable, CustomTestStringConvertible {
        /// RST (`SO_LINGER` 0): the connection was cut.
        case reset
        /// FIN: the server closed as if it had said everything.
        case close

        var testDescription: String { "\(self)" }
    }

    /// The connection ended after every byte count of the response, 0 to all
    /// of it, one connection each (with interim responses first: inside them,
    /// or right after them, too). Cut by a reset it is a `transport_error`
    /// saying the connection was lost; closed normally, a `transport_error`
    /// or, where HTTP cannot tell a cut from an end, `invalid_token_response`.
    /// The old token is kept, refresh token included. A token comes only from
    /// a body known to be whole (``Framing/mayGiveTheToken(after:of:endedBy:)``),
    /// and then it is saved.
    @Test(arguments: Framing.allCases, Ending.allCases)
    func aConnectionEndingAtEveryByteOfTheTokenResponseIsAnErrorAndKeepsTheToken(framing: Framing, ending: Ending) async throws {
        let response = Array(framing.response.utf8)
        try await RefreshFixture.with { fixture in
            for count in 0...response.count {
                let bytes = Array(response[..<count])
                fixture.server.enqueue(ending == .reset ? .reset(afterSending: bytes) : .close(afterSending: bytes))
                let after = "after \(count) of \(response.count) bytes (\(ending))"
                switch await fixture.token() {
                case .success(let token):
                    #expect(framing.mayGiveTheToken(after: count, of: response.count, endedBy: ending), "a token \(after)")
                    #expect(token.accessToken == Secret(Self.newAccessToken) && token.refreshToken == Secret(Self.newRefreshToken))
                    try await fixture.expectStored(access: Self.newAccessToken, refresh: Self.newRefreshToken)
                    // The old token again, for the next byte count.
                    _ = try await fixture.client.adopt(fixture.oldToken)
                case .failure(let error):
                    #expect(count < response.count || !framing.mustGiveTheToken(endedBy: ending), "no token \(after): \(error)")
                    switch ending {
                    case .reset:
                        #expect(error.code == .transportError, "\(after): \(error)")
                        #expect(error.message.contains("the connection was lost"), "\(after): \(error.message)")
                    case .close:
                        #expect([.transportError, .invalidTokenResponse].contains(error.code), "\(after): \(error)")
                    }
                    try await fixture.expectOldTokenKept(after)
                }
            }
            // One request per byte count: the transport retried none.
            #expect(fixture.server.requests.count == response.count + 1)
            #expect(fixture.server.requests.allSatisfy { $0.contains("grant_type=refresh_token") })
        }
    }

    /// A server that takes the request and never answers, or stops halfway:
    /// `timeout` once the request timeout has passed (not the test's
    /// patience), and the old token kept.
    @Test(arguments: [0, 60])
    func aStalledServerIsATimeoutAndKeepsTheToken(bytesBeforeStalling: Int) async throws {
        let response = Array(Framing.contentLength.response.utf8)
        try await RefreshFixture.with(requestTimeout: .seconds(1)) { fixture in
            fixture.server.enqueue(.stall(afterSending: Array(response.prefix(bytesBeforeStalling))))
            let started = ContinuousClock.now
            let result = await fixture.token()
            let waited = ContinuousClock.now - started

            guard case .failure(let error) = result else {
                Issue.record("a stalled server gave a token")
                return
            }
            #expect(error.code == .timeout, "\(error)")
            #expect(waited < .seconds(20), "the 1 s request timeout took \(waited)")
            try await fixture.expectOldTokenKept("after a stall")
        }
    }

    /// A form-encoded token response (GitHub's quirk) with a length, or
    /// chunked, is whole when it all arrived: accepted, unlike one without.
    @Test(arguments: [false, true])
    func aFormEncodedTokenResponseWithALengthIsAccepted(chunked: Bool) async throws {
        let form = Self.tokenForm
        let framing =
            chunked
            ? "Transfer-Encoding: chunked\r\n\r\n\(String(form.utf8.count, radix: 16))\r\n\(form)\r\n0\r\n\r\n"
            : "Content-Length: \(form.utf8.count)\r\n\r\n\(form)"
        try await RefreshFixture.with { fixture in
            fixture.server.enqueue(
                .close(afterSending: Array("HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\n\(framing)".utf8)))

            let token = try await fixture.token().get()

            #expect(token.refreshToken == Secret(Self.newRefreshToken))
            try await fixture.expectStored(access: Self.newAccessToken, refresh: Self.newRefreshToken)
        }
    }

    /// Interim (1xx) responses before the 200 are skipped, their fields with
    /// them: the refresh succeeds and its token is saved.
    @Test(arguments: [
        [continueResponse], [earlyHints], [continueResponse, earlyHints], [earlyHints, earlyHints],
    ])
    func interimResponsesBeforeThe200AreSkipped(interim: [String]) async throws {
        try await RefreshFixture.with { fixture in
            fixture.server.enqueue(.close(afterSending: Array((interim.joined() + Framing.contentLength.response).utf8)))

            let token = try await fixture.token().get()

            #expect(token.accessToken == Secret(Self.newAccessToken))
            #expect(token.refreshToken == Secret(Self.newRefreshToken))
            try await fixture.expectStored(access: Self.newAccessToken, refresh: Self.newRefreshToken)
        }
    }
}

extension TokenResponseFaultTests {
    /// The transport itself: a connection closed after an interim response,
    /// or inside its fields (which libcurl reports as a transfer done with
    /// that status), is lost; it is never answered with a 1xx "response".
    @Test(arguments: [continueResponse, earlyHints, continueResponse + earlyHints], [false, true])
    func aConnectionClosedAfterOrInsideAnInterimResponseIsLost(interim: String, cutInside: Bool) async throws {
        let server = try ScriptedServer()
        defer { server.stop() }
        let bytes = Array(interim.utf8)
        server.enqueue(.close(afterSending: cutInside ? Array(bytes.dropLast(2)) : bytes))
        let request = HTTPTransportRequest(url: try server.url("/"))
        try await withTransport { transport in
            let error = try await #require(throws: HTTPTransportError.self) { try await transport.send(request) }
            #expect(error == .connectionLost, "\(error)")
        }
    }

    /// A code exchange over the real transport, cancelled at a random moment
    /// while the provider takes a random few milliseconds to answer: it ends
    /// with the token, saved, or with `cancelled` and the old token kept;
    /// the transport resumes it once either way (a second resume would trap).
    @Test func aCodeExchangeCancelledAtRandomEndsWithTheTokenOrCancelled() async throws {
        var random = SystemRandomNumberGenerator()
        let response = Array(Framing.contentLength.response.utf8)
        try await RefreshFixture.with { fixture in
            for round in 0..<60 {
                let pending = try await fixture.client.authorizationURL(redirectURI: RefreshFixture.redirectURI)
                fixture.server.enqueue(.later(.microseconds(Int.random(in: 0...4000, using: &random)), sending: response))
                let exchange = Task { [client = fixture.client] in
                    try await client.authenticate(
                        .authorizationCode(
                            redirect: "\(RefreshFixture.redirectURI.absoluteString)?code=code-\(round)&state=\(pending.state)"))
                }
                try await Task.sleep(for: .microseconds(Int.random(in: 0...5000, using: &random)))
                exchange.cancel()

                switch await exchange.result {
                case .success(let token):
                    #expect(token.accessToken == Secret(Self.newAccessToken))
                    try await fixture.expectStored(access: Self.newAccessToken, refresh: Self.newRefreshToken)
                case .failure(let error):
                    #expect((error as? OAuth2Error)?.code == .cancelled, "round \(round): \(error)")
                    #expect(try await fixture.store.load(account: "alice") == fixture.oldToken)
                }
                // Back to the old token for the next round.
                try await fixture.store.save(fixture.oldToken, account: "alice")
            }
        }
    }
}

/// A client of account "alice" whose stored token has expired, a
/// ``FileTokenStore`` in a fresh directory, a ``CurlTransport``, and a
/// ``ScriptedServer`` as the token endpoint.
struct RefreshFixture {
    static let oldAccessToken = "at-old-fault-test"
    static let oldRefreshToken = "rt-old-fault-test"
    static let redirectURI = URL(string: "http://127.0.0.1/callback")!

    let server: ScriptedServer
    let store: FileTokenStore
    let client: OAuth2Client
    let oldToken: AccessToken

    /// Runs `body` with a fixture, then stops the transport and the server and removes the directory.
    static func with(requestTimeout: Duration = .seconds(30), _ body: (RefreshFixture) async throws -> Void) async throws {
        let server = try ScriptedServer()
        let transport = CurlTransport()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-fault-\(UUID().uuidString)").path
        defer {
            server.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        do {
            let configuration = try OAuth2Configuration(
                clientID: "client-1",
                authorizationEndpoint: try server.url("/authorize"),
                tokenEndpoint: try server.url("/token"),
                defaultScopes: ["read"],
                requestTimeout: requestTimeout
            )
            var oldToken = AccessToken(
                accessToken: Secret(oldAccessToken),
                expiresAt: Date(timeIntervalSinceNow: -60),
                refreshToken: Secret(oldRefreshToken),
                scopes: ["read"]
            )
            oldToken.binding = configuration.binding
            let store = try FileTokenStore(directory: directory + "/tokens")
            try await store.save(oldToken, account: "alice")
            // As the store gives it back (the expiry in the file's precision).
            oldToken = try #require(try await store.load(account: "alice"))
            let client = try OAuth2Provider(configuration: configuration, store: store, transport: transport).client(account: "alice")
            try await body(RefreshFixture(server: server, store: store, client: client, oldToken: oldToken))
        } catch {
            await transport.shutdown()
            throw error
        }
        await transport.shutdown()
    }

    /// A token from the client, which refreshes the expired one.
    func token() async -> Result<AccessToken, OAuth2Error> {
        do {
            return .success(try await client.token())
        } catch {
            return .failure(error)
        }
    }

    func expectOldTokenKept(_ when: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await store.load(account: "alice") == oldToken, "the stored token changed \(when)", sourceLocation: sourceLocation)
        #expect(client.currentToken == oldToken, "the client's token changed \(when)", sourceLocation: sourceLocation)
    }

    func expectStored(access: String, refresh: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let stored = try await store.load(account: "alice")
        #expect(stored?.accessToken == Secret(access), sourceLocation: sourceLocation)
        #expect(stored?.refreshToken == Secret(refresh), sourceLocation: sourceLocation)
    }
}
