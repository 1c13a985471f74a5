public import OAuth2

/// A ``/OAuth2/TokenStore`` in front of another that counts the calls it
/// passes on, so a test can assert, say, that a refresh saved exactly once
/// or that a grant stored nothing.
///
/// ```swift
/// let store = CountingTokenStore()
/// let provider = try OAuth2Provider(configuration: configuration, store: store, transport: transport)
/// // …
/// #expect(store.saveCount == 1)
/// ```
///
/// Every call goes to ``base`` unchanged, errors included; a call counts
/// whether or not the base store throws.
public final class CountingTokenStore<Base: TokenStore>: TokenStore {
    private struct Counts {
        var loads = 0
        var saves = 0
        var deletes = 0
        var locks = 0
    }

    /// The store the calls go to.
    public let base: Base
    private let counts = LockedValue(Counts())

    /// Counts the calls made to `base`.
    public init(_ base: Base) {
        self.base = base
    }

    /// How many times ``load(account:)`` was called.
    public var loadCount: Int { counts.withLock { $0.loads } }
    /// How many times ``save(_:account:)`` was called.
    public var saveCount: Int { counts.withLock { $0.saves } }
    /// How many times ``delete(account:)`` was called.
    public var deleteCount: Int { counts.withLock { $0.deletes } }
    /// How many times ``withLock(account:timeout:_:)`` was called.
    public var lockCount: Int { counts.withLock { $0.locks } }

    /// Whether the base store's tokens outlive the process.
    public var isPersistent: Bool { base.isPersistent }

    /// Counts, then loads from the base store.
    public func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        counts.withLock { $0.loads += 1 }
        return try await base.load(account: account)
    }

    /// Counts, then saves in the base store.
    public func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
        counts.withLock { $0.saves += 1 }
        try await base.save(token, account: account)
    }

    /// Counts, then deletes from the base store.
    public func delete(account: String) async throws(OAuth2Error) {
        counts.withLock { $0.deletes += 1 }
        try await base.delete(account: account)
    }

    /// Counts, then runs `body` holding the base store's lock.
    public func withLock<Result: Sendable>(
        account: String,
        timeout: Duration,
        _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result {
        counts.withLock { $0.locks += 1 }
        return try await base.withLock(account: account, timeout: timeout, body)
    }
}

extension CountingTokenStore where Base == InMemoryTokenStore {
    /// Counts the calls made to a new, empty ``/OAuth2/InMemoryTokenStore``.
    public convenience init() {
        self.init(InMemoryTokenStore())
    }
}
