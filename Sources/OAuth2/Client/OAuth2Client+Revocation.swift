import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Client {
    /// Revokes the token at the provider (RFC 7009) when it has a revocation
    /// endpoint, then deletes it locally whatever the provider answered.
    ///
    /// The refresh token is revoked first (that ends the grant, RFC 7009
    /// §2.1), then the access token. The delegate hears "did lose" with no
    /// error. Runs under the store's account lock, so a refresh in another
    /// process cannot store a new token of the revoked grant afterwards.
    ///
    /// - Throws: ``OAuth2Error``: `not_authenticated` when no token is held;
    ///   the provider's or the transport's error (the token is deleted
    ///   locally all the same); `store_error` when it could not be deleted;
    ///   `provider_mismatch` when the stored token belongs to another
    ///   provider or client (nothing is sent or deleted); `lock_timeout`.
    ///   A stored token that cannot be read (damaged, wrong mode, another
    ///   owner) cannot be revoked: what can be deleted is, and `store_error`
    ///   says the provider was not told.
    public func revoke() async throws(OAuth2Error) {
        do throws(OAuth2Error) {
            try await loadIfNeeded()
        } catch  where error.code == .storeError {
            // Unreadable: revokeHoldingLock deletes it and says so.
        }
        do {
            try await provider.vault.withAccountLock(account) { () async throws in
                try await self.revokeHoldingLock()
            }
        } catch let error as OAuth2Error {
            throw error
        } catch {
            throw OAuth2Error(code: .storeError, message: "the account lock failed: \(type(of: error))")
        }
    }

    private func revokeHoldingLock() async throws(OAuth2Error) {
        let held = machine.withLock { $0.currentToken }
        let stored: AccessToken?
        do throws(OAuth2Error) {
            stored = try await provider.vault.load(account: account)
        } catch  where error.code == .storeError {
            try await deleteUnreadable(error)
            return
        }
        guard let token = stored ?? held else {
            throw OAuth2Error(code: .notAuthenticated, message: "no token is stored for account \(account)")
        }
        var providerError: OAuth2Error?
        if configuration.revocationEndpoint != nil {
            do throws(OAuth2Error) {
                try await provider.revoke(token)
            } catch {
                providerError = error
            }
        }
        try await provider.vault.delete(account: account)
        notify(machine.withLock { $0.tokenLost(nil) })
        if let providerError { throw providerError }
    }

    /// Deletes a stored token that cannot be read, then says it was not revoked.
    private func deleteUnreadable(_ unreadable: OAuth2Error) async throws(OAuth2Error) {
        try await provider.vault.delete(account: account)
        notify(machine.withLock { $0.tokenLost(nil) })
        throw OAuth2Error(
            code: .storeError,
            message:
                "\(unreadable.message). It could not be revoked at the provider, since it could not be read; the local copy was deleted (revoke the grant in the provider's settings if it matters)"
        )
    }

    /// Signs out: revokes at the provider when it can, and always deletes the token locally.
    ///
    /// Unlike ``revoke()``, a provider that cannot be reached or refuses is
    /// not an error here (it is logged at debug); only failing to delete the
    /// local token is, or finding another provider's token under the account.
    ///
    /// - Throws: ``OAuth2Error`` `store_error`, `lock_timeout`, `provider_mismatch`.
    public func logout() async throws(OAuth2Error) {
        do throws(OAuth2Error) {
            try await revoke()
        } catch  where [.storeError, .lockTimeout, .providerMismatch].contains(error.code) {
            throw error
        } catch  where error.code == .notAuthenticated {
            notify(machine.withLock { $0.tokenLost(nil) })
        } catch {
            logger.debug("logout: the provider did not confirm the revocation", metadata: ["oauth2.error": "\(error.code)"])
        }
    }
}
