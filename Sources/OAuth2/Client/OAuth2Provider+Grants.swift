import Logging
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Grants that run before anyone knows whose token it is: each returns the
/// token, stamped with this provider's ``TokenBinding`` and the grant that
/// obtained it, and stores nothing. ``OAuth2Client/adopt(_:)`` then makes it
/// an account's token (a server learns the user from the token, not before).
/// The account-bound calls of ``OAuth2Client`` are built on these.
extension OAuth2Provider {
    /// Starts the user-agent (authorization code) flow: the URL to send the
    /// user to, with `response_type=code`, a fresh `state` (256 bits) and a
    /// PKCE S256 challenge.
    ///
    /// Keep the returned value (it is `Codable`) in the user's session and
    /// pass it to ``exchange(_:pending:)-(String,_)`` on the callback, on this instance or another.
    ///
    /// - Parameters:
    ///   - redirectURI: where the provider sends the user back; registered with the provider.
    ///   - scopes: the scopes to ask for; the configuration's defaults when `nil`.
    ///   - additionalParameters: more query parameters (`prompt`, `login_hint`, …); none may
    ///     replace one the flow sets.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when there is no
    ///   authorization endpoint or a parameter would override the flow's own.
    public func authorizationURL(
        redirectURI: URL,
        scopes: [String]? = nil,
        additionalParameters: [(String, String)] = []
    ) throws(OAuth2Error) -> PendingAuthorization {
        let pending = try AuthorizationRequestBuilder.make(
            configuration: configuration,
            redirectURI: redirectURI,
            scopes: scopes ?? configuration.defaultScopes,
            additionalParameters: additionalParameters,
            now: clock.now()
        )
        logger.debug("authorization started", metadata: ["oauth2.redirect_uri": "\(redirectURI.redactingQuery)"])
        return pending
    }

    /// Finishes the user-agent flow: validates the redirect and exchanges the code.
    ///
    /// The redirect is checked in this order: its scheme, host, port and path
    /// equal the redirect URI that was sent; `state` is present and equal;
    /// then `error` or `code`; a repeated parameter is an error; `iss` is
    /// compared (RFC 9207). A state is accepted once across the provider.
    ///
    /// - Parameters:
    ///   - redirect: the URL the provider sent the user to, as received or pasted.
    ///   - pending: what ``authorizationURL(redirectURI:scopes:additionalParameters:)`` returned.
    /// - Returns: the token, not stored: adopt it (``OAuth2Client/adopt(_:)``).
    /// - Throws: ``OAuth2Error``: the redirect's codes (`redirect_uri_mismatch`,
    ///   `state_mismatch`, …), the provider's error (`access_denied`, `invalid_grant`, …).
    public func exchange(_ redirect: String, pending: PendingAuthorization) async throws(OAuth2Error) -> AccessToken {
        let code: Secret
        do throws(OAuth2Error) {
            code = try RedirectValidator.validate(redirect, pending: pending)
        } catch {
            logger.debug("redirect refused", metadata: ["oauth2.error": "\(error.code)"])
            throw error
        }
        guard usedStates.consume(pending.state) else {
            throw OAuth2Error(code: .stateMismatch, message: "this authorization's state was already used")
        }
        let grant = Grant.authorizationCode(code: code, redirectURI: pending.redirectURI, codeVerifier: pending.codeVerifier)
        return try await requestToken(grant, requestedScopes: pending.scopes, idToken: .signIn(nonce: pending.nonce))
    }

    /// Finishes the user-agent flow from a redirect URL; see ``exchange(_:pending:)-(String,_)``.
    public func exchange(_ redirect: URL, pending: PendingAuthorization) async throws(OAuth2Error) -> AccessToken {
        try await exchange(redirect.absoluteString, pending: pending)
    }

    /// The resource owner password grant (RFC 6749 §4.3).
    ///
    /// Only when the configuration opts in (`allowsPasswordGrant`): the grant
    /// is deprecated (RFC 9700 §2.4). The password is sent once and not kept.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` without the opt-in, or the provider's error.
    public func passwordToken(username: String, password: Secret, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard configuration.allowsPasswordGrant else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the password grant is off; set allowsPasswordGrant in the configuration to use it"
            )
        }
        let scopes = scopes ?? configuration.defaultScopes
        return try await requestToken(.password(username: username, password: password, scopes: scopes), requestedScopes: scopes)
    }

    /// The client credentials grant (RFC 6749 §4.4): a token for the client itself.
    ///
    /// An account's client renews such a token by itself when it expires.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` for a public client
    ///   (without a secret nothing proves it is the client), or the provider's error.
    public func clientCredentialsToken(scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard configuration.clientAuthentication != .none else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the client credentials grant needs a confidential client: the configuration has no client secret"
            )
        }
        let scopes = scopes ?? configuration.defaultScopes
        return try await requestToken(.clientCredentials(scopes: scopes), requestedScopes: scopes)
    }

    /// The configuration's assertion grant (``OAuth2Configuration/assertionGrant``)
    /// with a fresh assertion.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the configuration
    ///   has no assertion grant or it fails to make an assertion, or the provider's error.
    public func assertionToken(scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard let assertionGrant = configuration.assertionGrant else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no assertion grant (assertionGrant)")
        }
        let scopes = scopes ?? configuration.defaultScopes
        let assertion = try await makeAssertion(assertionGrant)
        return try await requestToken(.assertion(type: assertionGrant.type, assertion: assertion, scopes: scopes), requestedScopes: scopes)
    }

    /// An assertion grant (RFC 7521) with an assertion the caller made, such
    /// as a JWT bearer assertion (RFC 7523: `urn:ietf:params:oauth:grant-type:jwt-bearer`).
    ///
    /// - Parameters:
    ///   - assertionType: the `grant_type`, an absolute URI.
    ///   - assertion: the assertion, sent as `assertion`; never logged.
    ///   - scopes: the scopes to ask for; the configuration's defaults when `nil`.
    /// - Throws: ``OAuth2Error``, the provider's error among them.
    public func assertionToken(assertionType: String, assertion: Secret, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        let scopes = scopes ?? configuration.defaultScopes
        return try await requestToken(.assertion(type: assertionType, assertion: assertion, scopes: scopes), requestedScopes: scopes)
    }

    /// Revokes a token at the provider (RFC 7009): the refresh token first
    /// (that ends the grant, RFC 7009 §2.1), then the access token. Deletes
    /// nothing: for an account's token, ``OAuth2Client/revoke()``.
    ///
    /// - Throws: ``OAuth2Error``: `invalid_configuration` without a revocation
    ///   endpoint; `provider_mismatch` for a token another provider or client
    ///   issued (nothing is sent); the provider's or the transport's error
    ///   (the first, when both revocations failed).
    public func revoke(_ token: AccessToken) async throws(OAuth2Error) {
        guard configuration.revocationEndpoint != nil else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no revocation endpoint")
        }
        try configuration.requireOwnBinding(of: token, consequence: "it is not sent")
        var firstError: OAuth2Error?
        let targets: [(Secret?, String)] = [(token.refreshToken, "refresh_token"), (token.accessToken, "access_token")]
        for case let (secret?, hint) in targets {
            do throws(OAuth2Error) {
                try await revoke(secret, tokenTypeHint: hint)
            } catch {
                logger.debug("revocation failed", metadata: ["oauth2.error": "\(error.code)", "oauth2.token_type_hint": "\(hint)"])
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
    }

    private func revoke(_ token: Secret, tokenTypeHint: String) async throws(OAuth2Error) {
        let request = try TokenRequestBuilder.revocationRequest(
            token: token, tokenTypeHint: tokenTypeHint, configuration: configuration, now: clock.now())
        let response = try await perform(request)
        if (200..<300).contains(response.status.code) { return }
        if (300..<400).contains(response.status.code) {
            throw OAuth2Error(
                code: .unexpectedRedirect, message: "the revocation endpoint answered with a redirect", httpStatus: response.status.code)
        }
        if response.status.code == 429 {
            throw ProviderResponse.rateLimited(response, by: "the revocation endpoint", now: clock.now())
        }
        var error =
            TokenResponseParser.providerError(from: response)
            ?? OAuth2Error(
                code: .httpError, message: "the revocation endpoint answered HTTP \(response.status.code)", httpStatus: response.status.code
            )
        // RFC 7009 §2.2.1: a 503 may say when to try again.
        if response.status.code == 503,
            let delay = response.headers[.retryAfter].flatMap({ ProviderResponse.retryAfter($0, now: clock.now()) })
        {
            error.retryAfter = delay
            error.message += "; retry after \(delay.secondsDescription)"
        }
        throw error
    }

    // MARK: - The token endpoint

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

    /// Verifies the token response's ID token as `expectation` says and keeps
    /// its claims in the token (``AccessToken/idToken``); nothing when OpenID
    /// Connect is not configured, or no ID token came where none is required.
    ///
    /// A refresh's ID token never makes this throw: the provider has rotated
    /// the refresh token in the same response, and a token the provider
    /// issued is never dropped. One that cannot be verified now, or is
    /// refused, is moved out of ``AccessToken/extraFields`` into
    /// ``AccessToken/unverifiedIDToken``; the refresh decides what that means.
    private func verifyIDToken(of token: inout AccessToken, expectation: IDTokenVerifier.Expectation) async throws(OAuth2Error) {
        guard let verifier = idTokenVerifier, let keySet else { return }
        guard let value = token.extraFields["id_token"] else {
            if case .signIn(.some) = expectation {
                throw OAuth2Error(
                    code: .invalidIDToken,
                    message: "the token response has no id_token, though the authorization request asked for openid"
                )
            }
            return
        }
        let now = clock.now()
        guard case .refresh(let previous) = expectation else {
            guard let raw = value.stringValue else {
                throw OAuth2Error(code: .invalidIDToken, message: "the token response's id_token is not a string")
            }
            token.idToken = try await verifier.verify(raw, expectation: expectation, accessToken: token.accessToken, keys: keySet, now: now)
            return
        }
        let raw = value.stringValue ?? ""
        let outcome: IDTokenVerifier.RefreshedIDToken =
            value.stringValue == nil
            ? .unverified(OAuth2Error(code: .invalidIDToken, message: "the token response's id_token is not a string"), refused: true)
            : await verifier.verifyRefreshed(raw, previous: previous, accessToken: token.accessToken, keys: keySet, now: now)
        switch outcome {
        case .verified(let claims):
            token.idToken = claims
        case .unverified(let error, let refused):
            logger.debug(
                refused ? "refreshed ID token refused" : "refreshed ID token not verifiable now; verification deferred",
                metadata: ["oauth2.error": "\(error.code)"])
            token.unverifiedIDToken = UnverifiedIDToken(rawValue: .opaque(raw), reason: error.code, isRefused: refused, receivedAt: now)
            token.extraFields["id_token"] = nil
            token.idToken = nil
        }
    }

    /// Verifies again an ID token whose verification a refresh deferred,
    /// against the claims of the sign-in, with its times as they stood when it came.
    func verifyDeferred(_ unverified: UnverifiedIDToken, previous: IDToken?) async -> IDTokenVerifier.RefreshedIDToken? {
        guard let verifier = idTokenVerifier, let keySet else { return nil }
        // at_hash was checked when it came, against the access token it came with.
        return await verifier.verifyRefreshed(
            unverified.rawValue.value, previous: previous, accessToken: nil, keys: keySet, now: unverified.receivedAt)
    }

    /// A fresh assertion from the configuration's grant; its failure is the app's, named without detail.
    func makeAssertion(_ grant: AssertionGrant) async throws(OAuth2Error) -> Secret {
        do {
            return try await grant.makeAssertion()
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "the assertion grant could not make an assertion: \(type(of: error))")
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

extension OAuth2Provider {
    /// Starts the device authorization grant (RFC 8628): the code to show the user and where.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` without a device
    ///   authorization endpoint, or the provider's error.
    public func startDeviceAuthorization(scopes: [String]? = nil) async throws(OAuth2Error) -> DeviceAuthorization {
        let scopes = scopes ?? configuration.defaultScopes
        let request = try TokenRequestBuilder.deviceAuthorizationRequest(scopes: scopes, configuration: configuration, now: clock.now())
        let requestedAt = clock.now()
        let response = try await perform(request)
        return try DeviceAuthorization.parse(response, requestedAt: requestedAt)
    }

    /// Polls the token endpoint until the user approves the device, denies
    /// it, or the code expires; returns the token without storing it.
    ///
    /// Waits the provider's interval between polls on the provider's clock,
    /// five seconds longer after each `slow_down` (RFC 8628 §3.5). Cancel the
    /// task to stop polling.
    ///
    /// - Throws: ``OAuth2Error`` `access_denied`, `expired_token`, `cancelled`, or another error.
    public func deviceToken(for authorization: DeviceAuthorization, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        let scopes = scopes ?? configuration.defaultScopes
        var interval = authorization.interval
        while true {
            do throws(OAuth2Error) {
                guard clock.now() < authorization.expiresAt else {
                    throw OAuth2Error(code: .expiredToken, message: "the device code expired before the user approved it")
                }
                do {
                    try await clock.sleep(for: interval)
                } catch {
                    throw OAuth2Error(code: .cancelled, message: "device authorization polling was cancelled")
                }
                return try await requestToken(.deviceCode(authorization.deviceCode), requestedScopes: scopes)
            } catch  where error.code == .authorizationPending {
                logger.trace("device authorization pending")
            } catch  where error.code == .slowDown {
                interval += .seconds(5)
                logger.debug("device authorization: slowing down", metadata: ["oauth2.interval": "\(interval)"])
            }
        }
    }
}
