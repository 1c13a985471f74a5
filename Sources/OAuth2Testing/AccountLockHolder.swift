public import OAuth2

/// Holds an account's store lock from another task until released, as
/// another process or instance would, and can change the store before
/// letting go: for testing a ``/OAuth2/TokenStore`` of your own (exclusion, timeouts,
/// reads after the lock) and code that waits for a lock.
///
/// ```swift
/// let holder = try await AccountLockHolder.hold(store, account: "alice")
/// // …another store value on the same data must now time out…
/// try await holder.release(storing: newToken)
/// ```
public final class AccountLockHolder: Sendable {
    typealias Change = @Sendable (any TokenStore, String) async throws(OAuth2Error) -> Void

    private let releaseSignal: AsyncStream<Change?>.Continuation
    private let task: Task<Void, any Error>

    private init(releaseSignal: AsyncStream<Change?>.Continuation, task: Task<Void, any Error>) {
        self.releaseSignal = releaseSignal
        self.task = task
    }

    /// Returns once the lock is held; throws what `withLock` threw if it could not be taken.
    public static func hold(_ store: some TokenStore, account: String) async throws -> AccountLockHolder {
        let (entered, enteredSignal) = AsyncStream<Void>.makeStream()
        let (released, releaseSignal) = AsyncStream<Change?>.makeStream()
        let task = Task {
            defer { enteredSignal.finish() }
            try await store.withLock(account: account, timeout: .seconds(10)) { () async throws(OAuth2Error) in
                enteredSignal.yield()
                for await change in released {
                    if let change { try await change(store, account) }
                    break
                }
            }
        }
        var didEnter = false
        for await _ in entered {
            didEnter = true
            break
        }
        guard didEnter else {
            try await task.value
            throw CancellationError()
        }
        return AccountLockHolder(releaseSignal: releaseSignal, task: task)
    }

    /// Leaves `withLock` and waits until it has returned (so the lock is free).
    public func release() async throws {
        releaseSignal.finish()
        try await task.value
    }

    /// Saves `token` under the lock, then releases it.
    public func release(storing token: AccessToken) async throws {
        try await release { (store, account) async throws(OAuth2Error) in try await store.save(token, account: account) }
    }

    /// Deletes the account's token under the lock, then releases it.
    public func releaseDeleting() async throws {
        try await release { (store, account) async throws(OAuth2Error) in try await store.delete(account: account) }
    }

    private func release(_ change: @escaping Change) async throws {
        releaseSignal.yield(change)
        try await task.value
    }
}
