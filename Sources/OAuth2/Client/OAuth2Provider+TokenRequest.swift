import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Provider {
    /// Sends a grant to the token endpoint and parses the answer; the token
    /// is stamped with this provider's binding and the grant.
    ///
    /// The expiry is computed from the time the request was sent, so a slow
    /// answer never makes a token look fresher than it is. With OpenID
    /// Connect configured, the response's ID token is verified as `idToken`
    /// says, and its claims are kept in the token (``AccessToken/idToken``).
    func requestToken(
        _ grant: Grant,
        requestedScopes: [String],
        idToken expectation: IDTokenVerifier.Expectation = .any
    ) async throws(OAuth2Error) -> AccessToken {
        let requestedAt = clock.now()
        let request = try TokenRequestBuilder.tokenRequest(for: grant, configuration: configuration, now: requestedAt)
        let started = ContinuousClock.now
        return try await telemetry.withClientSpan(
            "oauth2.token_request", url: request.url, method: request.method, errorType: \.code.rawValue
        ) { (span) async throws(OAuth2Error) in
            span.set("oauth2.grant_type", grant.name)
            do throws(OAuth2Error) {
                let token = try await requestToken(request, grant, requestedAt, requestedScopes, expectation, span: span)
                telemetry.tokenRequestFinished(grantType: grant.name, outcome: "success", duration: ContinuousClock.now - started)
                return token
            } catch {
                telemetry.tokenRequestFinished(grantType: grant.name, outcome: error.code.rawValue, duration: ContinuousClock.now - started)
                throw error
            }
        }
    }

    /// The token request itself, in its span.
    private func requestToken(
        _ request: HTTPTransportRequest,
        _ grant: Grant,
        _ requestedAt: Date,
        _ requestedScopes: [String],
        _ expectation: IDTokenVerifier.Expectation,
        span: ClientSpan
    ) async throws(OAuth2Error) -> AccessToken {
        logger.debug("token request", metadata: ["oauth2.grant": "\(grant.name)"])
        let response = try await perform(request)
        span.set("http.response.status_code", response.status.code)
        do throws(OAuth2Error) {
            var token = try TokenResponseParser.parse(
                response,
                requestedAt: requestedAt,
                requestedScopes: requestedScopes,
                maxBodySize: configuration.maxResponseSize
            )
            token.binding = configuration.binding
            token.grant = TokenGrant(type: grant.name, scopes: requestedScopes)
            try await verifyIDToken(of: &token, expectation: expectation)
            logger.debug("token response accepted", metadata: ["oauth2.grant": "\(grant.name)"])
            return token
        } catch {
            logger.debug(
                "token response refused",
                metadata: ["oauth2.grant": "\(grant.name)", "oauth2.error": "\(error.code)", "http.status": "\(response.status.code)"]
            )
            throw error
        }
    }
}

extension Grant {
    /// The grant's `grant_type`, for log lines and ``TokenGrant``: never a value.
    var name: String {
        switch self {
        case .authorizationCode: return "authorization_code"
        case .password: return "password"
        case .clientCredentials: return "client_credentials"
        case .refreshToken: return "refresh_token"
        case .assertion(let type, _, _): return type
        case .deviceCode: return TokenRequestBuilder.deviceCodeGrantType
        }
    }
}
