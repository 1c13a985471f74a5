#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A ``TokenStore`` that keeps tokens in memory, for tests and for processes
/// that sign in anew each time they start.
///
/// Safe to use from many tasks at once (a test that counts its calls puts
/// `OAuth2Testing`'s `CountingTokenStore` in front of it). Like
/// ``FileTokenStore`` it refuses an empty account name and tells accounts
/// apart by their UTF-8 bytes (see ``TokenStore``), so tests see what
/// production sees.
public final class InMemoryTokenStore: TokenStore {
    private struct State {
        /// Keyed by the account's UTF-8 bytes: `String`'s `==` would merge
        /// accounts that differ only in Unicode composition.
        var tokens: [[UInt8]: (account: String, token: AccessToken)]
        /// The accounts whose lock is held, by UTF-8 bytes.
        var locked: Set<[UInt8]> = []
        /// The ``ClientRecordStore`` records, by the UTF-8 bytes of their kind and name.
        var records: [RecordKey: Data] = [:]
    }

    private let state: LockedValue<State>

    /// `false`: every token in it was put there by the running process, so
    /// none is a token an earlier version stored without its provider.
    public var isPersistent: Bool { false }

    /// Creates a store holding `tokens`, keyed by account.
    public init(tokens: [String: AccessToken] = [:]) {
        var keyed: [[UInt8]: (account: String, token: AccessToken)] = [:]
        for (account, token) in tokens {
            keyed[Array(account.utf8)] = (account, token)
        }
        state = LockedValue(State(tokens: keyed))
    }

    /// The token stored under `account`, or `nil`.
    ///
    /// - Throws: `store_error` for an empty account name.
    public func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        try Self.check(account)
        return state.withLock { $0.tokens[Array(account.utf8)]?.token }
    }

    /// Stores `token` under `account`, replacing what was there.
    ///
    /// - Throws: `store_error` for an empty account name.
    public func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
        try Self.check(account)
        state.withLock { $0.tokens[Array(account.utf8)] = (account, token) }
    }

    /// Removes the token stored under `account`, if any.
    ///
    /// - Throws: `store_error` for an empty account name.
    public func delete(account: String) async throws(OAuth2Error) {
        try Self.check(account)
        state.withLock { $0.tokens[Array(account.utf8)] = nil }
    }

    /// Runs `body` holding `account`'s lock, which excludes every other task
    /// using this store value (the store is in-process, so that is everyone).
    ///
    /// - Throws: `lock_timeout` after `timeout`, `cancelled`, `store_error`
    ///   for an empty account name, or what `body` throws.
    public func withLock<Result: Sendable>(
        account: String,
        timeout: Duration,
        _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result {
        try Self.check(account)
        let key = Array(account.utf8)
        try await StoreLockWait.acquire(timeout: timeout, what: FileTokenStore.describe(account)) { () throws(OAuth2Error) -> Bool in
            state.withLock { $0.locked.insert(key).inserted }
        }
        defer { _ = state.withLock { $0.locked.remove(key) } }
        return try await body()
    }

    /// The accounts that have a token now, in no particular order.
    public var accounts: [String] { state.withLock { $0.tokens.values.map(\.account) } }

    private static func check(_ account: String) throws(OAuth2Error) {
        guard !account.isEmpty else {
            throw OAuth2Error.store("the account name is empty; every token is stored under a non-empty account name")
        }
    }
}

extension InMemoryTokenStore: ClientRecordStore {
    /// A record's key by its exact bytes, as accounts are told apart.
    struct RecordKey: Hashable {
        var kind: [UInt8]
        var name: [UInt8]

        init(_ key: ClientRecordKey) throws(OAuth2Error) {
            guard !key.kind.isEmpty, !key.name.isEmpty else {
                throw OAuth2Error.store("a record's kind and name must not be empty")
            }
            kind = Array(key.kind.utf8)
            name = Array(key.name.utf8)
        }
    }

    /// The record under `key`, or `nil`.
    ///
    /// - Throws: `store_error` for an empty kind or name.
    public func loadRecord(_ key: ClientRecordKey) async throws(OAuth2Error) -> Data? {
        let key = try RecordKey(key)
        return state.withLock { $0.records[key] }
    }

    /// Stores `record` under `key`, replacing what was there.
    ///
    /// - Throws: `store_error` for an empty kind or name.
    public func saveRecord(_ record: Data, for key: ClientRecordKey) async throws(OAuth2Error) {
        let key = try RecordKey(key)
        state.withLock { $0.records[key] = record }
    }

    /// Removes the record under `key`, if any.
    ///
    /// - Throws: `store_error` for an empty kind or name.
    public func deleteRecord(_ key: ClientRecordKey) async throws(OAuth2Error) {
        let key = try RecordKey(key)
        state.withLock { $0.records[key] = nil }
    }
}
