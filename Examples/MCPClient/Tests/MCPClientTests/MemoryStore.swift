import Foundation
import OAuth2
import Synchronization

/// Tokens and client records in memory, for the tests that send nothing.
final class MemoryStore: TokenStore, ClientRecordStore {
    let tokens = InMemoryTokenStore()
    let records = Mutex<[ClientRecordKey: Data]>([:])

    var isPersistent: Bool { false }

    func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        try await tokens.load(account: account)
    }

    func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
        try await tokens.save(token, account: account)
    }

    func delete(account: String) async throws(OAuth2Error) {
        try await tokens.delete(account: account)
    }

    func withLock<Result: Sendable>(
        account: String, timeout: Duration, _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result {
        try await tokens.withLock(account: account, timeout: timeout, body)
    }

    func loadRecord(_ key: ClientRecordKey) async throws(OAuth2Error) -> Data? {
        records.withLock { $0[key] }
    }

    func saveRecord(_ record: Data, for key: ClientRecordKey) async throws(OAuth2Error) {
        records.withLock { $0[key] = record }
    }

    func deleteRecord(_ key: ClientRecordKey) async throws(OAuth2Error) {
        records.withLock { _ = $0.removeValue(forKey: key) }
    }
}
