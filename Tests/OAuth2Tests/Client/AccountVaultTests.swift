import Foundation
import Logging
@testable import OAuth2
import OAuth2Testing
import Testing

/// The vault's own paths of "a token the provider issued is never dropped",
/// without a client: the lock that cannot be taken, the store that refuses,
/// the delete that fails.
@Suite struct AccountVaultTests {
    /// An in-memory store whose saves, deletes and locks fail on demand.
    final class SwitchableStore: TokenStore {
        let inner = InMemoryTokenStore()
        private let switches = LockedValue((saves: false, deletes: false, locks: false))

        func fail(saves: Bool = false, deletes: Bool = false, locks: Bool = false) {
            switches.withLock { $0 = (saves, deletes, locks) }
        }

        func load(account: String) async throws(OAuth2Error) -> AccessToken? {
            try await inner.load(account: account)
        }

        func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
            if switches.withLock({ $0.saves }) { throw OAuth2Error(code: .storeError, message: "save refused (injected)") }
            try await inner.save(token, account: account)
        }

        func delete(account: String) async throws(OAuth2Error) {
            if switches.withLock({ $0.deletes }) { throw OAuth2Error(code: .storeError, message: "delete refused (injected)") }
            try await inner.delete(account: account)
        }

        func withLock<Result: Sendable>(
            account: String, timeout: Duration, _ body: () async throws(OAuth2Error) -> Result
        ) async throws(OAuth2Error) -> Result {
            if switches.withLock({ $0.locks }) { throw OAuth2Error(code: .lockTimeout, message: "lock refused (injected)") }
            return try await inner.withLock(account: account, timeout: timeout, body)
        }
    }

    let store = SwitchableStore()
    let clock = ManualClock()
    let vault: AccountVault
    let configuration: OAuth2Configuration

    init() throws {
        configuration = try Fixture.configuration()
        vault = AccountVault(
            store: store, configuration: configuration, clock: clock,
            logger: .init(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), telemetry: .global)
    }

    private func issued(_ access: String) -> AccessToken {
        Fixture.token(access: access, refresh: "rt-\(access)", expiresAt: clock.now().addingTimeInterval(3600))
    }

    @Test func aTokenIssuedWhileTheLockCannotBeTakenIsSavedWithoutIt() async throws {
        store.fail(locks: true)

        let adoption = await vault.adoptIssued(issued("at-new"), account: "alice")

        #expect(adoption.storeError == nil)
        #expect(adoption.token.binding == configuration.binding)
        #expect(try await store.inner.load(account: "alice")?.accessToken.value == "at-new")
    }

    @Test func adoptingWhileTheLockCannotBeTakenThrowsAndSavesNothing() async throws {
        store.fail(locks: true)

        let error = await oauth2Error { _ = try await vault.adopt(issued("at-new"), account: "alice") }

        #expect(error?.code == .lockTimeout)
        #expect(try await store.inner.load(account: "alice") == nil)
    }

    @Test func aTokenTheStoreRefusesIsLoadedInsteadOfTheStoredOneUntilItIsSaved() async throws {
        _ = await vault.persist(issued("at-old"), account: "alice")
        store.fail(saves: true)

        let (kept, storeError) = await vault.persist(issued("at-new"), account: "alice")

        #expect(storeError?.code == .storeError)
        #expect(kept.accessToken.value == "at-new")
        #expect(try await vault.load(account: "alice")?.accessToken.value == "at-new")
        #expect(try await store.inner.load(account: "alice")?.accessToken.value == "at-old")
        #expect(!vault.unsavedNeedsRetry(account: "alice"), "tried again only after the retry interval")
        clock.advance(by: AccountVault.unsavedRetryInterval)
        #expect(vault.unsavedNeedsRetry(account: "alice"))

        store.fail()
        #expect(await vault.retryUnsaved(account: "alice") == nil)
        #expect(try await store.inner.load(account: "alice")?.accessToken.value == "at-new")
        #expect(!vault.unsavedNeedsRetry(account: "alice"))
    }

    @Test func aKeptTokenIsForgottenOnlyOnceTheStoreHasDeletedTheAccount() async throws {
        _ = await vault.persist(issued("at-old"), account: "alice")
        store.fail(saves: true)
        _ = await vault.persist(issued("at-new"), account: "alice")
        store.fail(deletes: true)

        let error = await oauth2Error { try await vault.delete(account: "alice") }

        #expect(error?.code == .storeError)
        #expect(try await vault.load(account: "alice")?.accessToken.value == "at-new")
        store.fail()
        try await vault.delete(account: "alice")
        #expect(try await vault.load(account: "alice") == nil)
    }
}
