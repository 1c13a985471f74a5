#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where tokens are kept, one per account key, and the lock that makes a
/// refresh happen once across every process that shares them.
///
/// ``InMemoryTokenStore`` and ``FileTokenStore`` ship with the framework; a
/// server that runs on several machines plugs in its own. Implementations must
/// be safe to call from many tasks at once, must make `save` atomic (a reader
/// sees the old token or the new one, never a mix), and throw
/// ``OAuth2Error`` with code ``OAuth2Error/Code/storeError`` when they cannot
/// read or write, never losing a token silently. The requirements throw
/// ``OAuth2Error`` only, so that what a store says reaches the app with a
/// stable code; a store wraps its database's or file system's errors
/// (naming no token or secret in the message).
///
/// Account keys are told apart by their UTF-8 bytes, not by `String`'s `==`
/// (which treats `"é"` precomposed and decomposed as equal): that is what a
/// file name or a database column can hold. An empty account key is refused.
/// Only "nothing stored" is `nil`: a token that is there but cannot be read
/// is an error, because treating it as missing would silently log the user
/// out.
///
/// ## The account lock
///
/// Many providers rotate refresh tokens, and some revoke the whole grant when
/// a spent one is presented again (refresh-token reuse protection). Two
/// processes that refresh one account at the same time therefore lose it. The
/// client holds ``withLock(account:timeout:_:)`` around "read the stored token
/// → decide → refresh (or renew) → save", and around deleting a token the
/// provider refused; whoever waited re-reads the store once it has the lock
/// and uses the token the other holder stored. What an implementation must
/// guarantee:
///
/// - **Exclusion** among everyone who shares the stored tokens: other tasks,
///   other store values on the same data, other processes, other machines.
///   Two `FileTokenStore` values on one directory exclude each other as two
///   processes would.
/// - **Release on death**: a holder that crashes or is killed must not keep
///   the lock (the kernel drops a file lock with its process; PostgreSQL drops
///   a transaction's lock with its connection; a Redis lock needs a lease
///   that expires, and then a fencing check before the save).
/// - **Bounded waiting**: give up after `timeout` with ``OAuth2Error`` code
///   ``OAuth2Error/Code/lockTimeout``; never hang. Cancelling the waiting task
///   ends the wait with `cancelled`.
/// - **Reads after the lock see writes made under it**: a `load` inside the
///   lock returns what the previous holder saved.
///
/// The lock is not re-entrant: the client never takes it twice for one account.
public protocol TokenStore: Sendable {
    /// The token stored under `account`, or `nil` when there is none.
    ///
    /// Throws `store_error` when a token is there but cannot be read or trusted.
    func load(account: String) async throws(OAuth2Error) -> AccessToken?
    /// Stores `token` under `account`, replacing what was there.
    ///
    /// Atomic: a reader sees the previous token or the new one, never a mix.
    /// Throwing means the new token may not have been stored; the client then
    /// keeps it in memory and saves it again later.
    func save(_ token: AccessToken, account: String) async throws(OAuth2Error)
    /// Deletes the token stored under `account`; deleting nothing is not an error.
    func delete(account: String) async throws(OAuth2Error)
    /// Runs `body` holding `account`'s exclusive lock, shared with every
    /// process that uses the same stored tokens (see "The account lock" above).
    ///
    /// - Parameters:
    ///   - account: the account whose lock to hold.
    ///   - timeout: how long to wait for the lock; then `lock_timeout`.
    ///   - body: what to run holding it: the client's reads and writes of
    ///     the store, so its errors are the store's own.
    /// - Throws: `lock_timeout`, `store_error` when the lock cannot be taken
    ///   (say, its file cannot be created), `cancelled`, or what `body` throws.
    func withLock<Result: Sendable>(
        account: String,
        timeout: Duration,
        _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result
    /// Whether the store's tokens outlive the process, so that it may hold
    /// tokens an earlier version of the library stored without a
    /// ``AccessToken/binding``: those are refused unless the configuration
    /// adopts them (``OAuth2Configuration/adoptsTokensStoredWithoutBinding``).
    /// `true` unless a store says otherwise; ``InMemoryTokenStore`` does, as
    /// every token in it was put there by the running process.
    var isPersistent: Bool { get }
}

extension TokenStore {
    /// A store's tokens outlive the process, unless it says otherwise.
    public var isPersistent: Bool { true }
}
