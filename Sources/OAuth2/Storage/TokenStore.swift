/// Where tokens are kept, one per account key.
///
/// ``InMemoryTokenStore`` and ``FileTokenStore`` ship with the framework; a
/// server that runs on several machines plugs in its own. Implementations must
/// be safe to call from many tasks at once, must make `save` atomic (a reader
/// sees the old token or the new one, never a mix), and must throw
/// ``OAuth2Error`` with code ``OAuth2Error/Code/storeError`` when they cannot
/// read or write, never losing a token silently.
///
/// Account keys are told apart by their UTF-8 bytes, not by `String`'s `==`
/// (which treats `"é"` precomposed and decomposed as equal): that is what a
/// file name or a database column can hold. An empty account key is refused.
/// Only "nothing stored" is `nil`: a token that is there but cannot be read
/// is an error, because treating it as missing would silently log the user
/// out.
public protocol TokenStore: Sendable {
    /// The token stored under `account`, or `nil` when there is none.
    ///
    /// Throws when a token is there but cannot be read or trusted.
    func load(account: String) async throws -> AccessToken?
    /// Stores `token` under `account`, replacing what was there.
    ///
    /// Atomic: a reader sees the previous token or the new one, never a mix.
    /// Throwing means the new token may not have been stored; keep it in memory.
    func save(_ token: AccessToken, account: String) async throws
    /// Deletes the token stored under `account`; deleting nothing is not an error.
    func delete(account: String) async throws
}
