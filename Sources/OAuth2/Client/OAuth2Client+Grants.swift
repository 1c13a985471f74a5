extension OAuth2Client {
    /// The resource owner password grant (RFC 6749 §4.3).
    ///
    /// Only when the configuration opts in (`allowsPasswordGrant`): the grant
    /// is deprecated (RFC 9700 §2.4). The password is sent once and not kept.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` without the opt-in, or the provider's error.
    @discardableResult
    public func authenticate(username: String, password: Secret, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard configuration.allowsPasswordGrant else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the password grant is off; set allowsPasswordGrant in the configuration to use it"
            )
        }
        let scopes = scopes ?? configuration.defaultScopes
        return try await authenticate(with: .password(username: username, password: password, scopes: scopes), requestedScopes: scopes)
    }

    /// The client credentials grant (RFC 6749 §4.4): a token for the client itself.
    ///
    /// - Throws: ``OAuth2Error``, the provider's error among them.
    @discardableResult
    public func authenticateWithClientCredentials(scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        let scopes = scopes ?? configuration.defaultScopes
        return try await authenticate(with: .clientCredentials(scopes: scopes), requestedScopes: scopes)
    }

    /// An assertion grant (RFC 7521), such as a JWT bearer assertion (RFC 7523:
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer`).
    ///
    /// - Parameters:
    ///   - assertionType: the `grant_type`, an absolute URI.
    ///   - assertion: the assertion, sent as `assertion`; never logged.
    /// - Throws: ``OAuth2Error``, the provider's error among them.
    @discardableResult
    public func authenticate(assertionType: String, assertion: Secret, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        let scopes = scopes ?? configuration.defaultScopes
        return try await authenticate(
            with: .assertion(type: assertionType, assertion: assertion, scopes: scopes),
            requestedScopes: scopes
        )
    }

    /// The configuration's assertion grant (``OAuth2Configuration/assertionGrant``):
    /// a token for a service account, renewed by the client itself with a
    /// fresh assertion whenever it expires or is rejected.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the configuration
    ///   has no assertion grant or it fails to make an assertion, or the provider's error.
    @discardableResult
    public func authenticateWithAssertion(scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard let assertionGrant = configuration.assertionGrant else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no assertion grant (assertionGrant)")
        }
        let scopes = scopes ?? configuration.defaultScopes
        let assertion = try await makeAssertion(assertionGrant)
        return try await authenticate(
            with: .assertion(type: assertionGrant.type, assertion: assertion, scopes: scopes),
            requestedScopes: scopes
        )
    }

    /// Starts the device authorization grant (RFC 8628): the code to show the user and where.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` without a device
    ///   authorization endpoint, or the provider's error.
    public func startDeviceAuthorization(scopes: [String]? = nil) async throws(OAuth2Error) -> DeviceAuthorization {
        let scopes = scopes ?? configuration.defaultScopes
        let request = try TokenRequestBuilder.deviceAuthorizationRequest(scopes: scopes, configuration: configuration)
        let requestedAt = provider.clock.now()
        let response = try await provider.perform(request)
        return try DeviceAuthorization.parse(response, requestedAt: requestedAt)
    }

    /// Polls the token endpoint until the user approves the device, denies it, or the code expires.
    ///
    /// Waits the provider's interval between polls on the provider's clock,
    /// five seconds longer after each `slow_down` (RFC 8628 §3.5). Cancel the
    /// task to stop polling.
    ///
    /// - Throws: ``OAuth2Error`` `access_denied`, `expired_token`, `cancelled`, or another error.
    @discardableResult
    public func completeDeviceAuthorization(_ authorization: DeviceAuthorization, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        let scopes = scopes ?? configuration.defaultScopes
        var interval = authorization.interval
        machine.withLock { $0.grantStarted() }
        while true {
            do throws(OAuth2Error) {
                guard provider.clock.now() < authorization.expiresAt else {
                    throw OAuth2Error(code: .expiredToken, message: "the device code expired before the user approved it")
                }
                do {
                    try await provider.clock.sleep(for: interval)
                } catch {
                    throw OAuth2Error(code: .cancelled, message: "device authorization polling was cancelled")
                }
                let grant = Grant.deviceCode(authorization.deviceCode)
                let token = try await requestToken(grant, requestedScopes: scopes)
                return try await adoptGrantedToken(token, grant: TokenGrant(type: grant.name, scopes: scopes))
            } catch where error.code == .authorizationPending {
                logger.trace("device authorization pending")
            } catch where error.code == .slowDown {
                interval += .seconds(5)
                logger.debug("device authorization: slowing down", metadata: ["oauth2.interval": "\(interval)"])
            } catch {
                notify(machine.withLock { $0.grantFailed(error) })
                throw error
            }
        }
    }
}
