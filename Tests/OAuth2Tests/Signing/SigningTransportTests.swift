import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// ``SigningTransport`` with a token source that is not an ``OAuth2Client``:
/// the signing and the 401 handling compose with any source and any transport.
@Suite struct SigningTransportTests {
    /// Hands out `first`, then `replacement` when asked to replace a rejected
    /// token, and records the calls (SigningTransportDPoPTests too).
    final class FixedTokenSource: TokenSource {
        let first: AccessToken
        let replacement: AccessToken
        private let log = LockedValue<[String]>([])

        init(first: AccessToken, replacement: AccessToken) {
            self.first = first
            self.replacement = replacement
        }

        /// Bearer tokens with these values.
        convenience init(first: String, replacement: String) {
            self.init(first: AccessToken(accessToken: Secret(first)), replacement: AccessToken(accessToken: Secret(replacement)))
        }

        var calls: [String] { log.withLock { $0 } }

        func token() async throws -> AccessToken {
            log.withLock { $0.append("token") }
            return first
        }

        func token(replacing rejected: AccessToken) async throws -> AccessToken {
            log.withLock { $0.append("replacing \(rejected.accessToken.value)") }
            return replacement
        }

        func tokenRejectedAfterRefresh(_ token: AccessToken, error: OAuth2Error) async {
            log.withLock { $0.append("rejected \(token.accessToken.value) \(error.code)") }
        }
    }

    private let api = URL(string: "https://api.example/v1/me")!
    private let invalidToken: HTTPFields = [.wwwAuthenticate: "Bearer error=\"invalid_token\""]

    @Test func signsWithTheSourcesTokenInTheHeaderOnly() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: api))

        #expect(inner.requests.map { $0.headers[.authorization] } == ["Bearer t-1"])
        #expect(inner.requests.first?.url == api)
        #expect(source.calls == ["token"])
    }

    @Test func replacesAnAuthorizationTheRequestCarriesAlready() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")
        var request = HTTPTransportRequest(url: api, headers: [.accept: "application/json"])
        request.headers.append(HTTPField(name: .authorization, value: "Basic dXNlcjpwYXNz"))
        request.headers.append(HTTPField(name: .authorization, value: "Bearer stale"))

        _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(request)

        let sent = try #require(inner.requests.first)
        #expect(sent.headers[values: .authorization] == ["Bearer t-1"])
        #expect(sent.headers[.accept] == "application/json")
    }

    // A challenge damaged after its error (`invalid_token, error_description=`
    // read before the damage) made the call fail with `unauthorized`, without
    // a refresh: malformed anywhere, it counts as a 401 without an error code.
    @Test(arguments: [
        [.wwwAuthenticate: #"Bearer error="invalid_token""#] as HTTPFields,
        [.wwwAuthenticate: #"Bearer error="invalid_token, error_description="unterminated"#] as HTTPFields,
    ])
    func a401AsksTheSourceForAReplacementOnceAndRetriesOnce(challenge: HTTPFields) async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 401, headers: challenge), for: api)
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let response = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: api))

        #expect(response.status == 200)
        #expect(inner.requests.map { $0.headers[.authorization] } == ["Bearer t-1", "Bearer t-2"])
        #expect(source.calls == ["token", "replacing t-1"])
    }

    @Test func aSecond401TellsTheSourceAndThrowsInvalidToken() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 401, headers: invalidToken), for: api)
        inner.enqueue(HTTPTransportResponse(status: 401, headers: invalidToken), for: api)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .invalidToken)
        #expect(source.calls == ["token", "replacing t-1", "rejected t-2 invalid_token"])
        #expect(inner.requests.count == 2)
    }

    @Test func a401FromAnotherOriginAfterARedirectIsReturnedAsIs() async throws {
        let inner = CannedTransport()
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: elsewhere.absoluteString]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 401, headers: invalidToken), for: elsewhere)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let response = try await SigningTransport(wrapping: inner, tokenSource: source).send(
            HTTPTransportRequest(url: api, redirects: .follow))

        #expect(response.status == 401)
        #expect(inner.requests.map { $0.headers[.authorization] } == ["Bearer t-1", nil])
        #expect(source.calls == ["token"])
    }

    @Test func aBackToTheTokensOriginAfterADetourIsSignedAgain() async throws {
        let inner = CannedTransport()
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        let back = URL(string: "https://api.example/v1/back")!
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: elsewhere.absoluteString]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: back.absoluteString]), for: elsewhere)
        inner.enqueue(HTTPTransportResponse(status: 200), for: back)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let response = try await SigningTransport(wrapping: inner, tokenSource: source).send(
            HTTPTransportRequest(url: api, redirects: .follow))

        #expect(response.status == 200)
        #expect(inner.requests.map { $0.headers[.authorization] } == ["Bearer t-1", nil, "Bearer t-1"])
    }

    // Only Authorization was dropped: a cookie or an API key the caller set went along.
    @Test func theRequestsOtherFieldsGoOnlyToItsOriginAndComeBackWithIt() async throws {
        let inner = CannedTransport()
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        let back = URL(string: "https://api.example/v1/back")!
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: elsewhere.absoluteString]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: back.absoluteString]), for: elsewhere)
        inner.enqueue(HTTPTransportResponse(status: 200), for: back)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")
        let request = HTTPTransportRequest(
            url: api,
            headers: [.cookie: "session=s3cret", HTTPField.Name("X-Api-Key")!: "k3y", .accept: "application/json"],
            redirects: .follow)

        _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(request)

        let sent = inner.requests.map { Set($0.headers.map(\.name.canonicalName)) }
        #expect(
            sent == [["cookie", "x-api-key", "accept", "authorization"], ["accept"], ["cookie", "x-api-key", "accept", "authorization"]])
    }

    // The body of a 307 went to whatever origin it named.
    @Test(arguments: [307, 308])
    func aBodyIsNotTakenToAnotherOriginAndTheRedirectIsReturned(status: Int) async throws {
        let inner = CannedTransport()
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        inner.enqueue(HTTPTransportResponse(status: .init(code: status), headers: [.location: elsewhere.absoluteString]), for: api)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")
        let request = HTTPTransportRequest(method: .post, url: api, body: Data("secret=1".utf8), redirects: .follow)

        let response = try await SigningTransport(wrapping: inner, tokenSource: source).send(request)

        #expect(response.status.code == status)
        #expect(inner.requests.count == 1)
    }

    @Test func aRedirectFromHTTPSToHTTPIsRefusedOnALaterHop() async throws {
        let inner = CannedTransport()
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: elsewhere.absoluteString]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: "http://elsewhere.example/y"]), for: elsewhere)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(
                HTTPTransportRequest(url: self.api, redirects: .follow))
        }

        #expect(error?.code == .insecureRedirect)
        #expect(inner.requests.count == 2)
    }

    @Test func plainHTTPToAnotherHostIsRefusedBeforeAnythingIsSent() async throws {
        let inner = CannedTransport()
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(
                HTTPTransportRequest(url: URL(string: "http://api.example/v1/me")!))
        }

        #expect(error?.code == .insecureEndpoint)
        #expect(inner.requests.isEmpty)
        #expect(source.calls.isEmpty)
    }

    @Test func a429IsRateLimitedWithRetryAfterAsFromTheTokenEndpoint() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 429, headers: [.retryAfter: "120"]), for: api)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .rateLimited)
        #expect(error?.retryAfter == .seconds(120))
        #expect(error?.httpStatus == 429)
        #expect(error?.message.hasSuffix("retry after 120 s") == true, "\(error?.message ?? "")")
        #expect(source.calls == ["token"], "no refresh for a 429")
    }

    @Test func theInnerTransportsFailuresAreTypedErrors() async throws {
        let inner = CannedTransport()
        inner.enqueue(error: HTTPTransportError.timeout, for: api)
        let source = FixedTokenSource(first: "t-1", replacement: "t-2")

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .timeout)
    }

    /// Throws `error` from `token()`.
    struct FailingTokenSource: TokenSource {
        let error: any Error
        func token() async throws -> AccessToken { throw error }
        func token(replacing rejected: AccessToken) async throws -> AccessToken { throw error }
    }

    struct SomeOtherError: Error {}

    @Test func aCancellationFromTheInnerTransportIsCancelledAndAnyOtherErrorATransportError() async throws {
        let inner = CannedTransport()
        inner.enqueue(error: CancellationError(), for: api)
        inner.enqueue(error: SomeOtherError(), for: api)
        let signing = SigningTransport(wrapping: inner, tokenSource: FixedTokenSource(first: "t-1", replacement: "t-2"))

        let cancelled = await #expect(throws: OAuth2Error.self) { _ = try await signing.send(HTTPTransportRequest(url: self.api)) }
        let other = await #expect(throws: OAuth2Error.self) { _ = try await signing.send(HTTPTransportRequest(url: self.api)) }

        #expect(cancelled?.code == .cancelled)
        #expect(other?.code == .transportError)
        #expect(other?.message.contains("SomeOtherError") == true)
    }

    @Test func aCancellationFromTheTokenSourceIsCancelledAndAnyOtherErrorNotAuthenticated() async throws {
        let inner = CannedTransport()

        let cancelled = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: FailingTokenSource(error: CancellationError()))
                .send(HTTPTransportRequest(url: self.api))
        }
        let other = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: FailingTokenSource(error: SomeOtherError()))
                .send(HTTPTransportRequest(url: self.api))
        }

        #expect(cancelled?.code == .cancelled)
        #expect(other?.code == .notAuthenticated)
        #expect(inner.requests.isEmpty)
    }
}
