/// One run of an operation per key at a time: callers that ask for a key
/// while its run is in flight wait for that run's result instead of starting another.
///
/// The first caller for a key starts the operation in a task of its own;
/// an entry lives only while its run is in flight, so a failure is shared by
/// the callers of that run and never cached (the next caller runs again),
/// and the map stays as small as the number of runs in flight.
///
/// Cancelling a caller does not cancel the run: others may be waiting for
/// it, and what it obtains (a token, a registration) must be kept. The
/// operation ends by its own timeouts.
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let inFlight = LockedValue<[Key: Task<Value, any Error>]>([:])

    init() {}

    /// Runs `operation` for `key` unless a run for `key` is already in
    /// flight, in which case that run's result is returned.
    ///
    /// - Returns: the result and whether this caller started the run (`leader`).
    func run(
        _ key: Key,
        operation: @escaping @Sendable () async throws -> Value
    ) async -> (result: Result<Value, any Error>, leader: Bool) {
        let (task, leader) = inFlight.withLock { tasks -> (Task<Value, any Error>, Bool) in
            if let running = tasks[key] {
                return (running, false)
            }
            let task = Task<Value, any Error> {
                defer { self.finish(key) }
                return try await operation()
            }
            tasks[key] = task
            return (task, true)
        }
        return (await task.result, leader)
    }

    private func finish(_ key: Key) {
        inFlight.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// How many runs are in flight, for tests.
    var inFlightCount: Int {
        inFlight.withLock { $0.count }
    }
}
