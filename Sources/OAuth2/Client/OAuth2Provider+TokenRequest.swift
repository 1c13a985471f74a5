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
    ///
    /// With a DPoP key, the request carries a proof made with it (a new one
    /// if the server asks for a nonce, ``performProvingPossession(of:_:)``),
    /// and a `DPoP` token comes back bound to it (``AccessToken/dpopKey``).
    ///
    /// - Throws: the provider's and the transport's errors, those of
    ///   ``TokenResponseParser``, `dpop_nonce_loop`, and `dpop_downgraded`
    ///   for a bearer answer the configuration does not allow (the token is
    ///   dropped: for a refresh, ``requestTokenKeepingDowngrade(_:requestedScopes:idToken:dpopKey:)``).
    func requestToken(
        _ grant: Grant,
        requestedScopes: [String],
        idToken expectation: IDTokenVerifier.Expectation = .any,
        dpopKey: DPoPKey? = nil
    ) async throws(OAuth2Error) -> AccessToken {
        let answer = try await requestTokenKeepingDowngrade(grant, requestedScopes: requestedScopes, idToken: expectation, dpopKey: dpopKey)
        if let refusal = answer.refusedDowngrade { throw refusal }
        return answer.token
    }

    /// The token endpoint's answer, and why it is not to be used as it is.
    struct TokenAnswer: Sendable {
        /// The token the provider issued.
        var token: AccessToken
        /// `dpop_downgraded`, when the request carried a proof, the token is
        /// a bearer token and the configuration does not allow that; the token
        /// is then unbound (no ``AccessToken/dpopKey``), and must not be used.
        var refusedDowngrade: OAuth2Error?
    }

    /// ``requestToken(_:requestedScopes:idToken:dpopKey:)``, handing back a
    /// token whose bearer answer to a DPoP request is refused instead of
    /// dropping it: a refresh keeps the refresh token the provider rotated.
    func requestTokenKeepingDowngrade(
        _ grant: Grant,
        requestedScopes: [String],
        idToken expectation: IDTokenVerifier.Expectation = .any,
        dpopKey: DPoPKey? = nil
    ) async throws(OAuth2Error) -> TokenAnswer {
        let started = ContinuousClock.now
        return try await telemetry.withClientSpan(
            "oauth2.token_request", url: configuration.tokenEndpoint, method: .post, errorType: \.code.rawValue
        ) { (span) async throws(OAuth2Error) in
            span.set("oauth2.grant_type", grant.name)
            do throws(OAuth2Error) {
                let answer = try await requestToken(grant, requestedScopes, expectation, dpopKey, span: span)
                let outcome = answer.refusedDowngrade?.code.rawValue ?? "success"
                telemetry.tokenRequestFinished(grantType: grant.name, outcome: outcome, duration: ContinuousClock.now - started)
                return answer
            } catch {
                telemetry.tokenRequestFinished(grantType: grant.name, outcome: error.code.rawValue, duration: ContinuousClock.now - started)
                throw error
            }
        }
    }

    /// The token request itself, in its span.
    private func requestToken(
        _ grant: Grant,
        _ requestedScopes: [String],
        _ expectation: IDTokenVerifier.Expectation,
        _ dpopKey: DPoPKey?,
        span: ClientSpan
    ) async throws(OAuth2Error) -> TokenAnswer {
        logger.debug("token request", metadata: ["oauth2.grant": "\(grant.name)", "oauth2.dpop": "\(dpopKey != nil)"])
        let configuration = configuration
        let (response, requestedAt) = try await performProvingPossession(of: dpopKey) { (now) throws(OAuth2Error) in
            try TokenRequestBuilder.tokenRequest(for: grant, configuration: configuration, now: now)
        }
        span.set("http.response.status_code", response.status.code)
        do throws(OAuth2Error) {
            var token = try TokenResponseParser.parse(
                response,
                requestedAt: requestedAt,
                requestedScopes: requestedScopes,
                maxBodySize: configuration.maxResponseSize,
                dpop: dpopKey != nil
            )
            token.binding = configuration.binding
            token.grant = TokenGrant(type: grant.name, scopes: requestedScopes)
            let refusedDowngrade = bind(&token, to: dpopKey)
            // RFC 8705 §3: the provider may have bound the token to the
            // certificate of this connection; it goes out with that one only.
            token.certificateThumbprint = configuration.clientCertificate?.thumbprint
            try await verifyIDToken(of: &token, expectation: expectation)
            logger.debug("token response accepted", metadata: ["oauth2.grant": "\(grant.name)"])
            return TokenAnswer(token: token, refusedDowngrade: refusedDowngrade)
        } catch {
            logger.debug(
                "token response refused",
                metadata: ["oauth2.grant": "\(grant.name)", "oauth2.error": "\(error.code)", "http.status": "\(response.status.code)"]
            )
            throw error
        }
    }

    /// Binds a token the provider issued in answer to a proof made with
    /// `key` to that key: a `DPoP` token. A `Bearer` one is kept unbound when
    /// the configuration allows the downgrade; otherwise the error says why
    /// it must not be used.
    private func bind(_ token: inout AccessToken, to key: DPoPKey?) -> OAuth2Error? {
        guard let key else { return nil }
        if token.tokenType.utf8.equalsIgnoringASCIICase("dpop") {
            token.dpopKey = key
            return nil
        }
        if configuration.dpop?.allowsBearerDowngrade == true {
            logger.debug("the provider answered a DPoP token request with a bearer token; allowed by the configuration")
            return nil
        }
        return OAuth2Error(
            code: .dpopDowngraded,
            message:
                "the provider answered a token request that carried a DPoP proof with a bearer token (token_type \(OAuth2Error.sanitize(String(token.tokenType.prefix(40))))); it is not used (set DPoPSettings.allowsBearerDowngrade to accept bearer tokens from this provider)"
        )
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
