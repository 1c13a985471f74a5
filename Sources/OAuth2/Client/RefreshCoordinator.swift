/// Makes refresh single-flight per account across every client that shares it.
///
/// The first caller for an account runs the operation in a task of its own;
/// callers arriving while it runs wait for the same result. An entry lives
/// only while its refresh runs, so the map stays as small as the number of
/// refreshes in flight however many accounts a server has.
final class RefreshCoordinator: Sendable {
    /// What a refresh produced: the token, and whether a token request was
    /// really made (`false` when the store already held a newer token).
    struct Outcome: Sendable {
        var token: AccessToken
        var refreshed: Bool
    }

    private let inFlight = LockedValue<[String: Task<Outcome, any Error>]>([:])

    /// Runs `operation` for `account` unless a refresh of it is already running,
    /// in which case the result of that one is returned.
    ///
    /// - Returns: the result and whether this caller started the refresh (`leader`).
    /// - Note: cancelling a waiter does not cancel the shared refresh, which
    ///   other callers may be waiting for; it ends by its own timeout.
    func refresh(
        account: String,
        operation: @escaping @Sendable () async throws -> Outcome
    ) async -> (result: Result<Outcome, any Error>, leader: Bool) {
        let (task, leader) = inFlight.withLock { tasks -> (Task<Outcome, any Error>, Bool) in
            if let running = tasks[account] {
                return (running, false)
            }
            let task = Task<Outcome, any Error> {
                defer { self.finish(account: account) }
                return try await operation()
            }
            tasks[account] = task
            return (task, true)
        }
        return (await task.result, leader)
    }

    private func finish(account: String) {
        inFlight.withLock { _ = $0.removeValue(forKey: account) }
    }

    /// How many refreshes are in flight, for tests.
    var inFlightCount: Int {
        inFlight.withLock { $0.count }
    }
}
