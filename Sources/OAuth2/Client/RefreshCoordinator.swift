#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Makes refresh single-flight per account across every client that shares it.
///
/// The first caller for an account runs the operation in a task of its own;
/// callers arriving while it runs wait for the same result. An entry lives
/// only while its refresh runs, so the map stays as small as the number of
/// refreshes in flight however many accounts a server has. Accounts are keyed
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

    private let inFlight = LockedValue<[AccountKey: Task<Outcome, any Error>]>([:])

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
        let key = AccountKey(account)
        let (task, leader) = inFlight.withLock { tasks -> (Task<Outcome, any Error>, Bool) in
            if let running = tasks[key] {
                return (running, false)
            }
            let task = Task<Outcome, any Error> {
                defer { self.finish(key) }
                return try await operation()
            }
            tasks[key] = task
            return (task, true)
        }
        return (await task.result, leader)
    }

    private func finish(_ key: AccountKey) {
        inFlight.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// How many refreshes are in flight, for tests.
    var inFlightCount: Int {
        inFlight.withLock { $0.count }
    }
}
