extension OAuth2Client {
    /// Sends a request signed with `Authorization: Bearer`, as NXOAuth2Connection did.
    ///
    /// Refreshes first when the token expires within the configuration's
    /// skew. On a 401 with `invalid_token` (or a 401 with no challenge at
    /// all) it refreshes once and retries once; a second 401 means the token
    /// is lost (deleted, "did lose"). Only an answer to a request that carried
    /// the token counts: a 401 from a redirect target on another origin,
    /// which never saw the token, is returned as it is. A 403 naming `insufficient_scope` is an
    /// error and is not refreshed. Any other response, error statuses
    /// included, is returned. The token goes in the header only, never in the
    /// URL; redirects are followed only when the request asks, never from
    /// `https` to `http`, and never with the token to another origin.
    ///
    /// - Throws: ``OAuth2Error``: `insecure_endpoint` for an `http` URL that
    ///   is not loopback; `not_authenticated`; `reauthorization_required`;
    ///   `invalid_token` / `unauthorized` after the retry; `insufficient_scope`;
    ///   `insecure_redirect`; `timeout`, `tls_error`, `transport_error`.
    public func send(_ request: HTTPRequest) async throws(OAuth2Error) -> HTTPResponse {
        try EndpointPolicy.requireSecure(request.url, role: "URL a bearer token is sent to")
        let token = try await validAccessToken()
        let (response, carriedToken) = try await sendSigned(request, token: token)
        guard carriedToken else { return response }
        switch Rejection(response) {
        case .none:
            return response
        case .insufficientScope(let scope):
            throw Self.insufficientScope(scope, status: response.status)
        case .unauthorized:
            throw OAuth2Error(code: .unauthorized, message: "the resource server answered 401 without a Bearer challenge to act on", httpStatus: 401)
        case .invalidToken:
            break
        }
        logger.debug("resource server rejected the token; refreshing once")
        let fresh = try await refresh(failedToken: token.accessToken, force: true, automatic: true)
        let (retried, retryCarriedToken) = try await sendSigned(request, token: fresh)
        guard retryCarriedToken else { return retried }
        switch Rejection(retried) {
        case .none:
            return retried
        case .insufficientScope(let scope):
            throw Self.insufficientScope(scope, status: retried.status)
        case .invalidToken, .unauthorized:
            try? await deleteIfUnchanged(fresh)
            let error = OAuth2Error(
                code: .invalidToken,
                message: "the resource server rejected the token again after a refresh; the token was deleted",
                httpStatus: retried.status
            )
            notify(machine.withLock { $0.tokenLost(error) })
            throw error
        }
    }

    private static func insufficientScope(_ scope: String?, status: Int) -> OAuth2Error {
        let needed = scope.map { " (needs: \(OAuth2Error.sanitize($0)))" } ?? ""
        return OAuth2Error(code: .insufficientScope, message: "the token lacks the scope this request needs\(needed)", httpStatus: status)
    }

    /// What a resource server's answer says of the token.
    private enum Rejection {
        case none
        case invalidToken
        case insufficientScope(String?)
        case unauthorized

        init(_ response: HTTPResponse) {
            switch response.status {
            case 401:
                let values = response.headers.values(for: "WWW-Authenticate")
                guard !values.isEmpty else {
                    self = .invalidToken
                    return
                }
                guard let challenge = BearerChallenge.parse(values) else {
                    self = .unauthorized
                    return
                }
                switch challenge.error {
                case nil, "invalid_token": self = .invalidToken
                case "insufficient_scope": self = .insufficientScope(challenge.scope)
                default: self = .unauthorized
                }
            case 403:
                let challenge = BearerChallenge.parse(response.headers.values(for: "WWW-Authenticate"))
                self = challenge?.error == "insufficient_scope" ? .insufficientScope(challenge?.scope) : .none
            default:
                self = .none
            }
        }
    }

    private static let maxRedirects = 10

    /// Sends with the token, following redirects by hand when asked so the
    /// token never leaves its origin or its TLS.
    ///
    /// - Returns: the final response, and whether the request it answers
    ///   carried the token (a redirect to another origin drops it).
    private func sendSigned(_ request: HTTPRequest, token: AccessToken) async throws(OAuth2Error) -> (response: HTTPResponse, carriedToken: Bool) {
        let authorization = "Bearer \(token.accessToken.value)"
        var current = request
        current.followRedirects = false
        current.headers.replaceOrAdd(name: "Authorization", value: authorization)
        var carriesToken = true
        for _ in 0...Self.maxRedirects {
            let response = try await provider.perform(current)
            guard request.followRedirects,
                  [301, 302, 303, 307, 308].contains(response.status),
                  let location = response.headers["Location"]
            else {
                return (response, carriesToken)
            }
            guard let next = URL(string: location, relativeTo: current.url)?.absoluteURL,
                  let scheme = next.scheme?.lowercased(), scheme == "https" || scheme == "http"
            else {
                throw OAuth2Error(code: .insecureRedirect, message: "a signed request was redirected to an unusable location")
            }
            if current.url.scheme?.lowercased() == "https" && scheme == "http" {
                throw OAuth2Error(code: .insecureRedirect, message: "a signed request was redirected from https to http: \(next.redactingQuery)")
            }
            // The origin is worked out here, not up front: it is string work every request would pay for.
            if Origin(next) != Origin(request.url) {
                current.headers.remove(name: "Authorization")
                carriesToken = false
            } else if !carriesToken {
                // Back on the token's origin after a detour: sign again.
                current.headers.replaceOrAdd(name: "Authorization", value: authorization)
                carriesToken = true
            }
            if response.status == 303 || ((response.status == 301 || response.status == 302) && current.method == "POST") {
                current.method = "GET"
                current.body = nil
                current.headers.remove(name: "Content-Type")
                current.headers.remove(name: "Content-Length")
            }
            current.url = next
        }
        throw OAuth2Error(code: .transportError, message: "too many redirects")
    }
}

/// A URL's origin (RFC 6454): scheme, host and port, with default ports filled in.
struct Origin: Equatable {
    let scheme: String
    let host: String
    let port: Int

    init(_ url: URL) {
        scheme = url.scheme?.lowercased() ?? ""
        host = url.host?.lowercased() ?? ""
        port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
    }
}
