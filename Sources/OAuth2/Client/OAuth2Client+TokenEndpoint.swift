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
            return try await adoptGrantedToken(token, grant: TokenGrant(type: grant.name, scopes: requestedScopes))
        } catch {
            notify(machine.withLock { $0.grantFailed(error) })
            throw error
        }
    }

    /// Stores a token a grant produced, under the account lock, then reports it.
    ///
    /// The lock keeps a refresh of the account's previous grant, running in
    /// another process, from overwriting the new token after it is saved.
    /// A token the store cannot save is kept in memory and used (the
    /// delegate hears "did fail to store"); only failing to take the lock
    /// (`lock_timeout`) fails the grant, and then the token is kept in memory too.
    func adoptGrantedToken(_ token: AccessToken, grant: TokenGrant) async throws(OAuth2Error) -> AccessToken {
        var token = token
        token.grant = grant
        let outcome: (token: AccessToken, storeError: OAuth2Error?)
        do {
            outcome = try await provider.withAccountLock(account) { [token] in
                await self.provider.persist(token, account: self.account)
            }
        } catch {
            // The lock could not be had: keep the token rather than drop what the provider issued.
            outcome = await provider.persist(token, account: account)
        }
        notify(machine.withLock { $0.grantSucceeded(outcome.token) })
        if let storeError = outcome.storeError {
            notify(.storeFailed(storeError))
        }
        return outcome.token
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
        case .deviceCode: return "urn:ietf:params:oauth:grant-type:device_code"
        }
    }
}
