#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An ``HTTPTransport`` that signs every request with a token from a
/// ``TokenSource`` (a bearer token, or a DPoP-bound one with a proof) and
/// sends it through another transport.
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
/// A DPoP-bound token (one with a ``AccessToken/dpopKey``, RFC 9449) goes as
/// `Authorization: DPoP`, never as a bearer token, with a `DPoP` proof made
/// afresh for each request and each hop: its `htm` and `htu` are that hop's
/// method and URL (a 303 makes it a GET), `ath` the token's hash, `nonce`
/// the last one the hop's origin gave. The proof goes only where the token
/// goes, and never to another URL than its own. Then:
///
/// - every `DPoP-Nonce` response header is remembered for the origin that
///   sent it; a 401 with `WWW-Authenticate: DPoP error="use_dpop_nonce"`
///   and a `DPoP-Nonce` is sent again once with that nonce (once per attempt
///   with a token: a refresh's retry may answer a new ask once more), and
///   asked again after that, the request throws `dpop_nonce_loop`;
/// - the `DPoP` challenge (`error`, `algs`; the `Bearer` one when there is
///   none) decides refresh and retry as above;
/// - a token of `token_type` DPoP without its key throws `dpop_key_missing`
///   before anything is sent.
///
/// A bearer token answered with a challenge for DPoP only (a resource that
/// wants DPoP-bound tokens) throws `dpop_required` without a refresh.
///
/// The nonces are kept per origin, in the provider's cache when the token
/// source is an ``OAuth2Client`` (shared with its token endpoint and its other
/// clients), otherwise in a cache of this transport's own, shared by its
/// copies: keep one transport rather than making one per request, or each
/// request pays a `use_dpop_nonce` round trip at a resource that wants nonces.
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
    /// The DPoP nonces resource servers gave, per origin.
    package let dpopNonces: DPoPNonceCache

    /// The most redirects followed for one request.
    public static let maxRedirects = 10

    /// Wraps `transport`, signing with tokens from `tokenSource`; metrics and
    /// spans go to `telemetry` (the app's bootstrapped backends by default).
    ///
    /// DPoP nonces are kept in the provider's cache when `tokenSource` is an
    /// ``OAuth2Client``, else in one of this transport's own (see the type's discussion).
    public init(wrapping transport: any HTTPTransport, tokenSource: any TokenSource, telemetry: OAuth2Telemetry = .global) {
        self.init(
            wrapping: transport, tokenSource: tokenSource, telemetry: telemetry, readyToken: nil,
            dpopNonces: Self.nonceCache(for: tokenSource))
    }

    /// As the public initializer; the first attempt signs with `readyToken`
    /// when there is one, which `tokenSource` gave just now, and DPoP nonces
    /// are kept in `dpopNonces`.
    package init(
        wrapping transport: any HTTPTransport, tokenSource: any TokenSource, telemetry: OAuth2Telemetry, readyToken: AccessToken?,
        dpopNonces: DPoPNonceCache
    ) {
        self.transport = transport
        self.tokenSource = tokenSource
        self.telemetry = telemetry
        self.readyToken = readyToken
        self.dpopNonces = dpopNonces
    }

    /// The provider's nonce cache when `tokenSource` is an ``OAuth2Client``
    /// (a ``DPoPNonceSharing`` source), so that its resource servers' nonces
    /// outlive one transport; else a new one.
    package static func nonceCache(for tokenSource: any TokenSource) -> DPoPNonceCache {
        (tokenSource as? any DPoPNonceSharing)?.dpopNonces ?? DPoPNonceCache()
    }

    /// Sends `request` signed, refreshing and retrying once on a 401 as described above.
    ///
    /// - Throws: ``OAuth2Error``: `insecure_endpoint`, the token source's
    ///   errors (`not_authenticated`, `reauthorization_required`, …),
    ///   `invalid_token` / `unauthorized` after the retry, `insufficient_scope`, `rate_limited`,
    ///   `insecure_redirect`, `dpop_required`, `dpop_nonce_loop`, `dpop_key_missing`, `timeout`, `tls_error`, `transport_error`, `cancelled`.
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
        switch BearerRejection(response, dpopBound: token.dpopKey != nil) {
        case .none:
            return response
        case .insufficientScope(let scope):
            throw Self.insufficientScope(scope, status: response.status.code, token: token)
        case .insufficientUserAuthentication(let challenge):
            throw Self.insufficientUserAuthentication(challenge, status: response.status.code, token: token)
        case .unauthorized:
            throw Self.unauthorized(response, dpopBound: token.dpopKey != nil)
        case .dpopRequired:
            throw Self.dpopRequired(response)
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
        switch BearerRejection(retried, dpopBound: fresh.dpopKey != nil) {
        case .none:
            telemetry.unauthorizedRetryFinished(outcome: "accepted")
            return retried
        case .insufficientScope(let scope):
            telemetry.unauthorizedRetryFinished(outcome: OAuth2Error.Code.insufficientScope.rawValue)
            throw Self.insufficientScope(scope, status: retried.status.code, token: fresh)
        case .insufficientUserAuthentication(let challenge):
            telemetry.unauthorizedRetryFinished(outcome: OAuth2Error.Code.insufficientUserAuthentication.rawValue)
            throw Self.insufficientUserAuthentication(challenge, status: retried.status.code, token: fresh)
        case .dpopRequired:
            telemetry.unauthorizedRetryFinished(outcome: OAuth2Error.Code.dpopRequired.rawValue)
            throw Self.dpopRequired(retried)
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

    private static func unauthorized(_ response: borrowing HTTPTransportResponse, dpopBound: Bool) -> OAuth2Error {
        guard dpopBound, let challenge = DPoPChallenge.parse(response.headers[values: .wwwAuthenticate]), let error = challenge.error
        else {
            return OAuth2Error(
                code: .unauthorized, message: "the resource server answered 401 without a Bearer challenge to act on", httpStatus: 401)
        }
        let named = OAuth2Error.sanitize(String(error.prefix(64)))
        let why =
            error == DPoPFields.useNonceError
            ? "asked for a DPoP nonce (use_dpop_nonce) without sending one in DPoP-Nonce"
            : "refused the DPoP-bound request (\(named))"
        return OAuth2Error(
            code: .unauthorized, message: "the resource server \(why)", errorDescription: challenge.errorDescription, httpStatus: 401)
    }

    private static func dpopRequired(_ response: borrowing HTTPTransportResponse) -> OAuth2Error {
        let algorithms = DPoPChallenge.parse(response.headers[values: .wwwAuthenticate])?.algorithms ?? []
        let algs =
            algorithms.isEmpty
            ? "" : " (proofs signed with \(algorithms.prefix(8).map { OAuth2Error.sanitize($0.rawValue) }.joined(separator: ", ")))"
        return OAuth2Error(
            code: .dpopRequired,
            message: """
                the resource server accepts only DPoP-bound tokens\(algs): bind the grant with DPoP \
                (OAuth2Configuration.dpop, or --dpop on the command line) and sign in again
                """,
            httpStatus: response.status.code)
    }

    /// What a resource's answer to a request that carried `token` says, as
    /// the error a signed request would throw (`insufficient_scope` and
    /// `insufficient_user_authentication` with ``OAuth2Error/stepUp``,
    /// `invalid_token`, `unauthorized`, `dpop_required`), or `nil` when it
    /// is no refusal. For requests another HTTP stack sent with the token.
    package static func refusal(_ response: borrowing HTTPTransportResponse, token: AccessToken) -> OAuth2Error? {
        switch BearerRejection(response, dpopBound: token.dpopKey != nil) {
        case .none:
            return nil
        case .insufficientScope(let scope):
            return insufficientScope(scope, status: response.status.code, token: token)
        case .insufficientUserAuthentication(let challenge):
            return insufficientUserAuthentication(challenge, status: response.status.code, token: token)
        case .unauthorized:
            return unauthorized(response, dpopBound: token.dpopKey != nil)
        case .dpopRequired:
            return dpopRequired(response)
        case .invalidToken:
            return OAuth2Error(code: .invalidToken, message: "the resource server refused the token", httpStatus: response.status.code)
        }
    }

    /// `insufficient_scope`, carrying what to ask for (``OAuth2Error/stepUp``):
    /// the scopes the token has and the ones the resource named.
    private static func insufficientScope(_ scope: String?, status: Int, token: AccessToken) -> OAuth2Error {
        let tokens = scope.map(ProviderText.scopeTokens) ?? []
        let needed = tokens.isEmpty ? "" : " (needs: \(tokens.joined(separator: " ")))"
        var error = OAuth2Error(
            code: .insufficientScope, message: "the token lacks the scope this request needs\(needed)", httpStatus: status)
        error.stepUp = StepUpRequest(resource: token.boundResource, scopes: StepUpRequest.union(token.scopes, tokens))
        return error
    }

    /// RFC 9470 `insufficient_user_authentication`, carrying the `acr_values`
    /// and `max_age` the resource asked for (``OAuth2Error/stepUp``); a
    /// refresh cannot help, as the user must authenticate again.
    private static func insufficientUserAuthentication(_ challenge: BearerChallenge, status: Int, token: AccessToken) -> OAuth2Error {
        let acrValues = challenge.acrValues.map(ProviderText.scopeTokens) ?? []
        var asked: [String] = []
        if !acrValues.isEmpty { asked.append("acr_values \(acrValues.joined(separator: " "))") }
        if let maxAge = challenge.maxAge { asked.append("max_age \(maxAge.components.seconds) s") }
        let what = asked.isEmpty ? "" : " (\(asked.joined(separator: ", ")))"
        var error = OAuth2Error(
            code: .insufficientUserAuthentication,
            message: "the resource server asks for a stronger or more recent authentication of the user\(what)",
            errorDescription: challenge.errorDescription, httpStatus: status)
        error.stepUp = StepUpRequest(resource: token.boundResource, scopes: token.scopes, acrValues: acrValues, maxAge: challenge.maxAge)
        return error
    }

    /// Sends with the token, following redirects by hand unless told not to,
    /// so the token never leaves its origin or its TLS.
    ///
    /// The request carries `span`'s context (``ClientSpan/inject(into:)``)
    /// on every hop. A DPoP-bound token gets a proof of its own on every hop
    /// that carries it, and a hop asked for a nonce is sent again once with it.
    ///
    /// - Returns: the final response, and whether the request it answers
    ///   carried the token (a redirect to another origin drops it).
    @inline(__always) // One async frame (a task allocation) fewer per signed request.
    private func sendSigned(_ request: HTTPTransportRequest, token: AccessToken, span: ClientSpan) async throws(OAuth2Error) -> (
        response: HTTPTransportResponse, carriedToken: Bool
    ) {
        var authorization = token.authorizationField
        let key = token.dpopKey
        if let key {
            // RFC 9449 §7.1: a bound token goes in the DPoP scheme, whatever its recorded type.
            if authorization.value.utf8.first != UInt8(ascii: "D") {
                authorization = HTTPField(name: .authorization, value: "DPoP \(token.accessToken.value)")
            }
            span.set("oauth2.dpop", true)
            span.set("oauth2.dpop.algorithm", key.algorithm.rawValue)
        } else if authorization.value.utf8.first == UInt8(ascii: "D") {
            // `DPoP <token>`: a token of type DPoP whose key is gone is not sent as a bearer token either.
            throw OAuth2Error(
                code: .dpopKeyMissing,
                message: "the token is of type DPoP but has no DPoP key to make proofs with; sign in again to bind a new one")
        }
        try Self.requireAudience(of: token, for: request.url)
        var current = request
        if current.clientCertificate == nil {
            current.clientCertificate = tokenSource.clientCertificate
        }
        if let bound = token.certificateThumbprint {
            try Self.requireCertificate(bound, presentedBy: current)
        }
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
        var redirects = 0
        var nonceRetry = DPoPNonceRetry()
        var nonceToSend: String?
        while true {
            if let key {
                // A proof for this hop only; never one made for another URL or method.
                if carriesToken {
                    current.headers[fields: DPoPFields.proof] = [
                        try dpopProof(key: key, token: token, for: current, nonce: nonceToSend)
                    ]
                } else {
                    current.headers[DPoPFields.proof] = nil
                }
                nonceToSend = nil
            }
            let response = try await OAuth2Error.performing(current, on: transport)
            if key != nil, carriesToken, request.redirects != .never || Self.answeredWhereSent(response, current) {
                if let nonce = response.headers[DPoPFields.nonce] {
                    dpopNonces.update(nonce, for: (response.url ?? current.url).absoluteString)
                }
                switch nonceRetry.event(DPoPNonceRetry.Event(resourceAnswer: response)) {
                case .accept:
                    break
                case .retry(let nonce):
                    span.set("oauth2.dpop.nonce_retried", true)
                    nonceToSend = nonce
                    continue
                case .fail(var error):
                    error.message =
                        "the resource server asked for a DPoP nonce again after the retry with the nonce it gave (\(current.method) \(current.url.redactingQuery))"
                    error.httpStatus = response.status.code
                    throw error
                }
            }
            guard request.redirects != .never else { return (response, Self.answeredWhereSent(response, current)) }
            switch RedirectStep.next(after: response, of: current, original: request) {
            case .stop:
                return (response, carriesToken)
            case .refuse(let reason):
                throw OAuth2Error(code: .insecureRedirect, message: "a signed request was \(reason)")
            case .follow(let next, let sameOrigin):
                redirects += 1
                guard redirects <= Self.maxRedirects else {
                    throw OAuth2Error(
                        code: .transportError,
                        message: "too many redirects (more than \(Self.maxRedirects)) from \(request.method) \(request.url.redactingQuery)")
                }
                current = next
                current.redirects = .never
                // The hop's fields are the caller's (all of them on the token's
                // origin, the harmless ones elsewhere): sign and trace them again.
                // The audience rule holds on every hop: a redirect on the
                // token's origin but outside its resource does not get it.
                carriesToken = sameOrigin && Self.audienceAllows(token, next.url)
                if carriesToken {
                    current.headers[fields: .authorization] = [authorization]
                } else {
                    current.headers[.authorization] = nil
                }
                span.inject(into: &current.headers)
            }
        }
    }

    /// A fresh proof for `request` as it is sent now: its method and URL,
    /// the token's hash, and `nonce`, else the last one its origin gave.
    private func dpopProof(key: DPoPKey, token: AccessToken, for request: HTTPTransportRequest, nonce: String?) throws(OAuth2Error)
        -> HTTPField
    {
        let url = request.url.absoluteString
        let proof = try key.proof(
            method: request.method.rawValue, url: url, accessToken: token.accessToken, nonce: nonce ?? dpopNonces.nonce(for: url),
            now: Date())
        return HTTPField(name: DPoPFields.proof, value: proof.value)
    }
}

extension SigningTransport {
    /// The audience rule: a token obtained for one resource (RFC 8707,
    /// ``TokenBinding/resource``) goes only to URLs of that resource; any
    /// other throws `resource_mismatch` before a byte is sent. A token
    /// recording no resource passes.
    static func requireAudience(of token: AccessToken, for url: URL) throws(OAuth2Error) {
        guard !audienceAllows(token, url) else { return }
        throw OAuth2Error(
            code: .resourceMismatch,
            message:
                "the token was obtained for the resource \(token.boundResource?.redactingQuery ?? "?"), not for \(url.redactingQuery); it is not sent there"
        )
    }

    /// Whether `token` may go to `url` under the audience rule.
    static func audienceAllows(_ token: AccessToken, _ url: URL) -> Bool {
        guard let resource = token.binding?.resource else { return true }
        return ProtectedResourceMetadata.matches(resource: resource, requestedURL: url)
    }

    /// RFC 8705 §3: a token bound to a certificate goes only on a request
    /// that presents that certificate, over `https` (where the handshake
    /// presents it); anything else throws `certificate_mismatch` before a
    /// byte is sent. Redirects keep the request's certificate.
    static func requireCertificate(_ thumbprint: String, presentedBy request: HTTPTransportRequest) throws(OAuth2Error) {
        guard let presented = request.clientCertificate else {
            throw OAuth2Error(
                code: .certificateMismatch,
                message: "the token is bound to a client certificate (x5t#S256 \(thumbprint)) and the request presents none")
        }
        guard presented.thumbprint == thumbprint else {
            throw OAuth2Error(
                code: .certificateMismatch,
                message:
                    "the token is bound to a client certificate (x5t#S256 \(thumbprint)) and the request presents another (x5t#S256 \(presented.thumbprint))"
            )
        }
        guard request.url.scheme?.lowercased() == "https" else {
            throw OAuth2Error(
                code: .certificateMismatch,
                message: "a token bound to a client certificate goes only over https, where the certificate is presented")
        }
    }

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
    /// RFC 9470: the user must authenticate again, as the challenge says.
    case insufficientUserAuthentication(BearerChallenge)
    case unauthorized
    /// A bearer token was answered with a challenge for DPoP only: the
    /// resource wants DPoP-bound tokens, and refreshing cannot help.
    case dpopRequired

    // Borrowed: an initializer owns its arguments by default, which copied
    // the response the caller goes on to return, on every signed request.
    /// `dpopBound`: the request presented a DPoP-bound token with a proof,
    /// so the `DPoP` challenge speaks for it (the `Bearer` one when there is none).
    init(_ response: borrowing HTTPTransportResponse, dpopBound: Bool = false) {
        switch response.status.code {
        case 401:
            let values = response.headers[values: .wwwAuthenticate]
            guard !values.isEmpty else {
                self = .invalidToken
                return
            }
            let (bearer, dpop, malformed) = BearerChallenge.readSchemes(values)
            guard !malformed else {
                // A challenge that cannot be read to its end says nothing
                // against refreshing, not even the part read before the damage
                // (a Bearer error cut short is no error code): count it as a
                // 401 without an error code.
                self = .invalidToken
                return
            }
            let error: String?
            let scope: String?
            if dpopBound, let dpop {
                (error, scope) = (dpop.error, dpop.scope)
            } else if let bearer {
                (error, scope) = (bearer.error, bearer.scope)
                if error == "insufficient_user_authentication" {
                    self = .insufficientUserAuthentication(bearer)
                    return
                }
            } else {
                // RFC 9449 §7.2: a resource that takes only DPoP-bound tokens
                // challenges with DPoP alone.
                self = !dpopBound && dpop != nil ? .dpopRequired : .unauthorized
                return
            }
            switch error {
            case nil, "invalid_token": self = .invalidToken
            case "insufficient_scope": self = .insufficientScope(scope)
            default: self = .unauthorized
            }
        case 403:
            let (bearer, dpop, _) = BearerChallenge.readSchemes(response.headers[values: .wwwAuthenticate])
            if bearer?.error == "insufficient_scope" {
                self = .insufficientScope(bearer?.scope)
            } else if dpopBound, dpop?.error == "insufficient_scope" {
                self = .insufficientScope(dpop?.scope)
            } else {
                self = .none
            }
        default:
            self = .none
        }
    }
}
