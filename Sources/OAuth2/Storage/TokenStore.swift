/// Where tokens are kept, one per account key.
///
/// ``InMemoryTokenStore`` and ``FileTokenStore`` ship with the framework; a
/// server that runs on several machines plugs in its own. Implementations must
/// be safe to call from many tasks at once, must make `save` atomic (a reader
/// sees the old token or the new one, never a mix), and must throw
/// ``OAuth2Error`` with code ``OAuth2Error/Code/storeError`` when they cannot
/// read or write, never losing a token silently.
public protocol TokenStore: Sendable {
    /// The token stored under `account`, or `nil` when there is none.
    func load(account: String) async throws -> AccessToken?
    /// Stores `token` under `account`, replacing what was there.
    func save(_ token: AccessToken, account: String) async throws
    /// Deletes the token stored under `account`; deleting nothing is not an error.
    func delete(account: String) async throws
}
