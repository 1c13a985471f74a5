extension OAuth2Client {
    /// Sends a grant to the token endpoint and parses the answer.
    ///
    /// The expiry is computed from the time the request was sent, so a slow
    /// answer never makes a token look fresher than it is.
    func requestToken(_ grant: Grant, requestedScopes: [String]) async throws(OAuth2Error) -> AccessToken {
        let request = TokenRequestBuilder.tokenRequest(for: grant, configuration: configuration)
        let requestedAt = provider.clock.now()
        logger.debug("token request", metadata: ["oauth2.grant": "\(grant.name)"])
        let response = try await provider.perform(request)
        do throws(OAuth2Error) {
            let token = try TokenResponseParser.parse(
                response,
                requestedAt: requestedAt,
                requestedScopes: requestedScopes,
                maxBodySize: configuration.maxResponseSize
            )
            logger.debug("token response accepted", metadata: ["oauth2.grant": "\(grant.name)"])
            return token
        } catch {
            logger.debug(
                "token response refused",
                metadata: ["oauth2.grant": "\(grant.name)", "oauth2.error": "\(error.code)", "http.status": "\(response.status)"]
            )
            throw error
        }
    }

    /// Runs a grant that yields a token, stores it and reports it.
    func authenticate(with grant: Grant, requestedScopes: [String]) async throws(OAuth2Error) -> AccessToken {
        machine.withLock { $0.grantStarted() }
        do throws(OAuth2Error) {
            let token = try await requestToken(grant, requestedScopes: requestedScopes)
            return try await adoptGrantedToken(token)
        } catch {
            notify(machine.withLock { $0.grantFailed(error) })
            throw error
        }
    }

    /// Stores a token a grant produced, then reports it.
    func adoptGrantedToken(_ token: AccessToken) async throws(OAuth2Error) -> AccessToken {
        try await provider.save(token, account: account)
        notify(machine.withLock { $0.grantSucceeded(token) })
        return token
    }
}

extension Grant {
    /// The grant's name for log lines: never a value.
    var name: String {
        switch self {
        case .authorizationCode: return "authorization_code"
        case .password: return "password"
        case .clientCredentials: return "client_credentials"
        case .refreshToken: return "refresh_token"
        case .assertion(let type, _, _): return type
        case .deviceCode: return "device_code"
        }
    }
}
