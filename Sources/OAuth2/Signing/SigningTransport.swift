#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An ``HTTPTransport`` that signs every request with a bearer token from a
/// ``TokenSource`` and sends it through another transport.
///
/// Put it in front of whatever sends your API calls (``CurlTransport``, a
/// test double, another SDK's transport behind an adapter) and those calls
/// get the framework's token handling:
///
/// - `Authorization: Bearer` in the header only, never in the URL; a bearer
///   token is only sent over `https`, or `http` to a loopback host
///   (`insecure_endpoint` otherwise);
/// - a token refreshed before it expires (the source's job);
/// - on a 401 with `invalid_token`, or a 401 without a challenge (or one
///   that cannot be parsed), one refresh and one retry; a second 401 throws
///   `invalid_token` and tells the source (``OAuth2Client`` then deletes the
///   token). Only a 401 to a request that carried the token counts: a
///   redirect target on another origin never sees it, and its 401 is
///   returned as it is;
/// - a 403 naming `insufficient_scope` throws `insufficient_scope` (no refresh);
/// - a 429 throws `rate_limited`, with `Retry-After` in ``OAuth2Error/retryAfter``,
///   as a 429 from the token endpoint does;
/// - redirects (301, 302, 303, 307, 308) are followed by default, by hand,
///   at most ``maxRedirects`` times (`transport_error` beyond): the token
///   and the request's other header fields go along only to the request's
///   own origin (scheme, host and port; elsewhere only `Accept`,
///   `Accept-Language`, `Accept-Encoding`, `User-Agent` and `Cache-Control`
///   go), a redirect from `https` to `http` throws `insecure_redirect` on any
///   hop, whatever its host, and 301/302 turn a POST into a GET, 303
///   anything but HEAD; 307 and 308 keep the method and body, and a
///   redirect that would take a body to another origin is not followed (the
///   3xx is returned). A request whose ``HTTPTransportRequest/redirects`` is
///   ``RedirectPolicy/never`` gets the 3xx back instead.
///
/// Any other response, error statuses included, is returned. Failures of
/// the inner transport become ``OAuth2Error`` (`timeout`, `tls_error`,
/// `transport_error`, `cancelled`).
///
/// ```swift
/// let api = SigningTransport(wrapping: CurlTransport(), tokenSource: provider.client(account: userID))
/// let response = try await api.send(HTTPTransportRequest(url: URL(string: "https://api.example/me")!))
/// ```
public struct SigningTransport: HTTPTransport {
    /// The transport requests are sent through.
    public let transport: any HTTPTransport
    /// Where tokens come from.
    public let tokenSource: any TokenSource
    /// Where the span of each request and the count of 401 retries go.
    public let telemetry: OAuth2Telemetry
    /// A token the source gave without suspending, for the first attempt:
    /// asking `tokenSource` through its protocol costs two async frames (a
    /// task allocation and two executor checks each) a request. `nil`: ask it.
    private let readyToken: AccessToken?

    /// The most redirects followed for one request.
    public static let maxRedirects = 10

    /// Wraps `transport`, signing with tokens from `tokenSource`; metrics and
    /// spans go to `telemetry` (the app's bootstrapped backends by default).
    public init(wrapping transport: any HTTPTransport, tokenSource: any TokenSource, telemetry: OAuth2Telemetry = .global) {
        self.init(wrapping: transport, tokenSource: tokenSource, telemetry: telemetry, readyToken: nil)
    }

    /// As the public initializer; the first attempt signs with `readyToken`
    /// when there is one, which `tokenSource` gave just now.
    init(wrapping transport: any HTTPTransport, tokenSource: any TokenSource, telemetry: OAuth2Telemetry, readyToken: AccessToken?) {
        self.transport = transport
        self.tokenSource = tokenSource
        self.telemetry = telemetry
        self.readyToken = readyToken
    }

    /// Sends `request` signed, refreshing and retrying once on a 401 as described above.
    ///
    /// - Throws: ``OAuth2Error``: `insecure_endpoint`, the token source's
    ///   errors (`not_authenticated`, `reauthorization_required`, …),
    ///   `invalid_token` / `unauthorized` after the retry, `insufficient_scope`, `rate_limited`,
    ///   `insecure_redirect`, `timeout`, `tls_error`, `transport_error`, `cancelled`.
    @inline(__always) // One async frame (a task allocation) fewer per signed request.
    public func send(_ request: HTTPTransportRequest) async throws(OAuth2Error) -> HTTPTransportResponse {
        try await telemetry.withClientSpan(
            "oauth2.signed_request", url: request.url, method: request.method, errorType: \.code.rawValue
        ) { (span) async throws(OAuth2Error) in
            // The span's context goes into the copy `sendSigned` makes anyway,
            // not into one of its own here: one copy of the request a send, not two.
            let response = try await sendInSpan(request, span: span)
            span.set("http.response.status_code", response.status.code)
            return response
        }
    }

    private func sendInSpan(_ request: HTTPTransportRequest, span: ClientSpan) async throws(OAuth2Error) -> HTTPTransportResponse {
        try EndpointPolicy.requireSecure(request.url, role: "URL a bearer token is sent to")
        let token: AccessToken
        if let readyToken {
            token = readyToken
        } else {
            token = try await Self.sourced { () async throws in try await tokenSource.token() }
        }
        let (response, carriedToken) = try await sendSigned(request, token: token, span: span)
        if response.status.code == 429 { throw Self.rateLimited(response, request) }
        guard carriedToken else { return response }
        switch BearerRejection(response) {
        case .none:
            return response
        case .insufficientScope(let scope):
            throw Self.insufficientScope(scope, status: response.status.code)
        case .unauthorized:
            throw OAuth2Error(
                code: .unauthorized, message: "the resource server answered 401 without a Bearer challenge to act on", httpStatus: 401)
        case .invalidToken:
            break
        }
        span.set("oauth2.retried", true)
        let fresh: AccessToken
        let retried: HTTPTransportResponse
        let retryCarriedToken: Bool
        do throws(OAuth2Error) {
            fresh = try await Self.sourced { () async throws in try await tokenSource.token(replacing: token) }
            (retried, retryCarriedToken) = try await sendSigned(request, token: fresh, span: span)
        } catch {
            telemetry.unauthorizedRetryFinished(outcome: error.code.rawValue)
            throw error
        }
        if retried.status.code == 429 {
            telemetry.unauthorizedRetryFinished(outcome: OAuth2Error.Code.rateLimited.rawValue)
            throw Self.rateLimited(retried, request)
        }
        guard retryCarriedToken else {
            telemetry.unauthorizedRetryFinished(outcome: "accepted")
            return retried
        }
        switch BearerRejection(retried) {
        case .none:
            telemetry.unauthorizedRetryFinished(outcome: "accepted")
            return retried
        case .insufficientScope(let scope):
            telemetry.unauthorizedRetryFinished(outcome: OAuth2Error.Code.insufficientScope.rawValue)
            throw Self.insufficientScope(scope, status: retried.status.code)
        case .invalidToken, .unauthorized:
            telemetry.unauthorizedRetryFinished(outcome: "rejected")
            let error = OAuth2Error(
                code: .invalidToken,
                message: "the resource server rejected the token again after a refresh",
                httpStatus: retried.status.code
            )
            await tokenSource.tokenRejectedAfterRefresh(fresh, error: error)
            throw error
        }
    }

    /// A token from the source, its failures as ``OAuth2Error``.
    @inline(__always) // One async frame (a task allocation) fewer per signed request.
    private static func sourced(_ body: () async throws -> AccessToken) async throws(OAuth2Error) -> AccessToken {
        do {
            return try await body()
        } catch let error as OAuth2Error {
            throw error
        } catch let error where isCancellation(error) {
            throw OAuth2Error(code: .cancelled, message: "getting a token was cancelled")
        } catch {
            throw OAuth2Error(code: .notAuthenticated, message: "the token source failed: \(type(of: error))")
        }
    }

    private static func rateLimited(_ response: HTTPTransportResponse, _ request: HTTPTransportRequest) -> OAuth2Error {
        ProviderResponse.rateLimited(response, by: "the resource server (\(request.method) \(request.url.redactingQuery))", now: Date())
    }

    private static func insufficientScope(_ scope: String?, status: Int) -> OAuth2Error {
        let tokens = scope.map(ProviderText.scopeTokens) ?? []
        let needed = tokens.isEmpty ? "" : " (needs: \(tokens.joined(separator: " ")))"
        return OAuth2Error(code: .insufficientScope, message: "the token lacks the scope this request needs\(needed)", httpStatus: status)
    }

    /// Sends with the token, following redirects by hand unless told not to,
    /// so the token never leaves its origin or its TLS.
    ///
    /// The request carries `span`'s context (``ClientSpan/inject(into:)``)
    /// on every hop.
    ///
    /// - Returns: the final response, and whether the request it answers
    ///   carried the token (a redirect to another origin drops it).
    @inline(__always) // One async frame (a task allocation) fewer per signed request.
    private func sendSigned(_ request: HTTPTransportRequest, token: AccessToken, span: ClientSpan) async throws(OAuth2Error) -> (
        response: HTTPTransportResponse, carriedToken: Bool
    ) {
        let authorization = token.authorizationField
        var current = request
        span.inject(into: &current.headers)
        current.redirects = .never
        if current.headers.contains(where: { $0.name == .authorization }) {
            current.headers[fields: .authorization] = [authorization]
        } else {
            // Most requests carry no Authorization of their own: appending
            // skips the search and splice of a replacement, on every request.
            current.headers.append(authorization)
        }
        var carriesToken = true
        for _ in 0...Self.maxRedirects {
            let response = try await OAuth2Error.performing(current, on: transport)
            guard request.redirects != .never else { return (response, Self.answeredWhereSent(response, current)) }
            switch RedirectStep.next(after: response, of: current, original: request) {
            case .stop:
                return (response, carriesToken)
            case .refuse(let reason):
                throw OAuth2Error(code: .insecureRedirect, message: "a signed request was \(reason)")
            case .follow(let next, let sameOrigin):
                current = next
                current.redirects = .never
                // The hop's fields are the caller's (all of them on the token's
                // origin, the harmless ones elsewhere): sign and trace them again.
                carriesToken = sameOrigin
                if sameOrigin {
                    current.headers[fields: .authorization] = [authorization]
                } else {
                    current.headers[.authorization] = nil
                }
                span.inject(into: &current.headers)
            }
        }
        throw OAuth2Error(
            code: .transportError,
            message: "too many redirects (more than \(Self.maxRedirects)) from \(request.method) \(request.url.redactingQuery)")
    }
}

extension SigningTransport {
    /// Whether the answer to a request sent without following redirects comes
    /// from the request's own origin. A wrapped transport that followed
    /// redirects by itself may answer for another origin, which never saw
    /// the token: its 401 says nothing of the token.
    static func answeredWhereSent(_ response: borrowing HTTPTransportResponse, _ request: HTTPTransportRequest) -> Bool {
        if response.answeredByUnknownHop { return false }
        guard let url = response.url, url != request.url else { return true }
        return Origin(url) == Origin(request.url)
    }
}

/// What a resource server's answer says of the token that signed the request.
enum BearerRejection {
    case none
    case invalidToken
    case insufficientScope(String?)
    case unauthorized

    // Borrowed: an initializer owns its arguments by default, which copied
    // the response the caller goes on to return, on every signed request.
    init(_ response: borrowing HTTPTransportResponse) {
        switch response.status.code {
        case 401:
            let values = response.headers[values: .wwwAuthenticate]
            guard !values.isEmpty else {
                self = .invalidToken
                return
            }
            let (bearer, malformed) = BearerChallenge.read(values)
            guard !malformed, let challenge = bearer else {
                // A challenge that cannot be read to its end says nothing
                // against refreshing, not even the part read before the damage
                // (a Bearer error cut short is no error code): count it as a
                // 401 without an error code.
                self = malformed ? .invalidToken : .unauthorized
                return
            }
            switch challenge.error {
            case nil, "invalid_token": self = .invalidToken
            case "insufficient_scope": self = .insufficientScope(challenge.scope)
            default: self = .unauthorized
            }
        case 403:
            let challenge = BearerChallenge.parse(response.headers[values: .wwwAuthenticate])
            self = challenge?.error == "insufficient_scope" ? .insufficientScope(challenge?.scope) : .none
        default:
            self = .none
        }
    }
}
