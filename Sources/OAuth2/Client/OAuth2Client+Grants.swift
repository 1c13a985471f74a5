import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Client {
    /// Runs a grant and makes its token this account's: saved under the
    /// store's account lock, held, and reported ("did get access token", or
    /// "did fail to get access token" when the grant fails).
    ///
    /// NXOAuth2Client's `handleRedirectURL:` and `authenticateWithUsername:password:`
    /// are `authenticate(.authorizationCode(redirect: url))` and
    /// `authenticate(.password(username:password:))`. For the authorization
    /// code, a `pending` of `nil` is the one this client's
    /// ``authorizationURL(redirectURI:scopes:additionalParameters:)`` remembers.
    /// A token of the client credentials or configured assertion grant is
    /// renewed by the client itself when it expires.
    ///
    /// A token the store cannot save is kept in memory and used (the
    /// delegate hears "did fail to store"): what the provider issued is never dropped.
    ///
    /// - Returns: the token, already stored.
    /// - Throws: ``OAuth2Error``, as ``OAuth2Provider/token(for:)``; `state_mismatch`
    ///   for an authorization code when no authorization is pending.
    @discardableResult
    public func authenticate(_ grant: OAuth2Grant) async throws(OAuth2Error) -> AccessToken {
        var grant = grant
        if case .authorizationCode(let callback, nil) = grant.kind {
            guard let pending = machine.withLock({ $0.pendingAuthorization }) else {
                let error = OAuth2Error(
                    code: .stateMismatch, message: "no authorization is pending (the redirect was already used, or none was started)")
                notify(machine.withLock { $0.redirectRejected(error) })
                throw error
            }
            grant = OAuth2Grant(kind: .authorizationCode(callback, pending: pending))
        }
        return try await obtain { [grant] () async throws(OAuth2Error) -> AccessToken in
            try await self.provider.token(for: grant)
        }
    }

    /// Makes `token` this account's token: saved under the store's account
    /// lock, held, and reported ("did get access token").
    ///
    /// For a token a grant of the provider returned before anyone knew whose
    /// it was (``OAuth2Provider/token(for:)``): a server learns the user from the token, then adopts
    /// it under that user's account. The lock keeps a refresh of the
    /// account's previous grant, in another process, from overwriting it.
    /// A token the store cannot save is kept in memory and used (the delegate
    /// hears "did fail to store").
    ///
    /// - Returns: the account's previous token, if it had another one: the
    ///   app may revoke it (``OAuth2Provider/revoke(_:)``) rather than leave
    ///   that grant alive at the provider. A previous token of another
    ///   provider or client is replaced and not returned.
    /// - Throws: ``OAuth2Error`` `provider_mismatch` for a token another
    ///   provider or client issued; `lock_timeout`.
    @discardableResult
    public func adopt(_ token: AccessToken) async throws(OAuth2Error) -> AccessToken? {
        try configuration.requireOwnBinding(of: token)
        let adoption = try await provider.vault.adopt(token, account: account)
        announce(adoption.token, storeError: adoption.storeError)
        guard let previous = adoption.previous, previous.accessToken != token.accessToken else { return nil }
        return previous
    }

    /// Runs a grant of the provider and adopts its token, with the state
    /// machine's transitions and the delegate's "did get" or "did fail".
    func obtain(_ grant: () async throws(OAuth2Error) -> AccessToken) async throws(OAuth2Error) -> AccessToken {
        machine.withLock { $0.grantStarted() }
        let token: AccessToken
        do throws(OAuth2Error) {
            token = try await grant()
        } catch {
            notify(machine.withLock { $0.grantFailed(error) })
            throw error
        }
        return await adoptGrantedToken(token)
    }

    /// Stores a token a grant produced, then reports it: under the account
    /// lock, or without it when the lock cannot be taken, and kept in memory
    /// if the store fails (``AccountVault/adoptIssued(_:account:)``).
    func adoptGrantedToken(_ token: AccessToken) async -> AccessToken {
        let outcome = await provider.vault.adoptIssued(token, account: account)
        announce(outcome.token, storeError: outcome.storeError)
        return outcome.token
    }

    /// The account now holds `token`: "did get", and "did fail to store" when the store refused it.
    private func announce(_ token: AccessToken, storeError: OAuth2Error?) {
        notify(machine.withLock { $0.grantSucceeded(token) })
        if let storeError {
            notify(.storeFailed(storeError))
        }
    }

    /// Starts the device authorization grant (RFC 8628): the code to show the user and where.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` without a device
    ///   authorization endpoint, or the provider's error.
    public func startDeviceAuthorization(scopes: [String]? = nil) async throws(OAuth2Error) -> DeviceAuthorization {
        try await provider.startDeviceAuthorization(scopes: scopes)
    }
}
