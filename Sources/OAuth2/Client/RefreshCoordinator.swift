#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Makes refresh single-flight per account across every client that shares it.
///
/// A ``SingleFlight`` per account: the first caller runs the refresh,
/// callers arriving while it runs wait for the same result, and nothing is
/// kept once it ends, however many accounts a server has. Accounts are keyed
/// by their exact bytes (``AccountKey``). This saves lock traffic; the store's
/// account lock is what makes the refresh single across processes.
final class RefreshCoordinator: Sendable {
    /// What a refresh produced: the token, whether a token request was
    /// really made (`false` when the store already held a newer token), and
    /// the store's failure when the new token could not be saved (it is then
    /// kept in memory by the provider), and why the response's ID token could
    /// not be verified yet when its verification was deferred.
    struct Outcome: Sendable {
        var token: AccessToken
        var refreshed: Bool
        var storeError: OAuth2Error? = nil
        var idTokenDeferred: OAuth2Error? = nil
    }

    private let flights = SingleFlight<AccountKey, Outcome>()

    /// Runs `operation` for `account` unless a refresh of it is already running,
    /// in which case the result of that one is returned.
    ///
    /// - Returns: the result and whether this caller started the refresh (`leader`).
    /// - Note: cancelling a waiter does not cancel the shared refresh, which
    ///   other callers may be waiting for and which must save what the
    ///   provider issued; it ends by its own timeout.
    func refresh(
        account: String,
        operation: @escaping @Sendable () async throws -> Outcome
    ) async -> (result: Result<Outcome, any Error>, leader: Bool) {
        await flights.run(AccountKey(account), operation: operation)
    }

    /// How many refreshes are in flight, for tests.
    var inFlightCount: Int {
        flights.inFlightCount
    }
}
