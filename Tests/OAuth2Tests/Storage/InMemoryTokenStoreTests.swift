import Foundation
import Testing
@testable import OAuth2

@Suite struct InMemoryTokenStoreTests {
    @Test func savedTokenLoadsBack() async throws {
        let store = InMemoryTokenStore()

        try await store.save(StoreFixtures.token(1), account: "alice")
        let loaded = try await store.load(account: "alice")

        #expect(loaded == StoreFixtures.token(1))
        #expect(store.accounts == ["alice"])
    }

    @Test func startsWithTheTokensItIsGiven() async throws {
        let store = InMemoryTokenStore(tokens: ["alice": StoreFixtures.token(1)])

        #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
        #expect(try await store.load(account: "bob") == nil)
    }

    @Test func deleteRemovesTheTokenAndDeletingNothingIsFine() async throws {
        let store = InMemoryTokenStore(tokens: ["alice": StoreFixtures.token(1)])

        try await store.delete(account: "alice")
        try await store.delete(account: "alice")

        #expect(try await store.load(account: "alice") == nil)
        #expect(store.accounts.isEmpty)
    }

    @Test func emptyAccountNameIsRejected() async throws {
        let store = InMemoryTokenStore()

        let error = try await #require(throws: OAuth2Error.self) { try await store.save(StoreFixtures.token(1), account: "") }

        #expect(error.code == .storeError)
        #expect(store.accounts.isEmpty)
    }

    @Test func accountsDifferingOnlyInUnicodeCompositionAreDistinct() async throws {
        let store = InMemoryTokenStore()

        try await store.save(StoreFixtures.token(1), account: "\u{E9}")
        try await store.save(StoreFixtures.token(2), account: "e\u{301}")

        #expect(try await store.load(account: "\u{E9}") == StoreFixtures.token(1))
        #expect(try await store.load(account: "e\u{301}") == StoreFixtures.token(2))
    }

    @Test func concurrentCallsAllLand() async throws {
        let store = InMemoryTokenStore()

        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                group.addTask {
                    try await store.save(StoreFixtures.token(index), account: "user-\(index % 10)")
                    _ = try await store.load(account: "user-\(index % 10)")
                }
            }
            try await group.waitForAll()
        }

        #expect(store.accounts.count == 10)
    }

    // MARK: - The account lock

    @Test func withLockRefusesAnEmptyAccountName() async throws {
        let store = InMemoryTokenStore()

        let error = try await #require(throws: OAuth2Error.self) {
            try await store.withLock(account: "", timeout: .seconds(10)) {}
        }

        #expect(error.code == .storeError)
    }
}

@Suite struct InMemoryTokenStoreRecordsTests {
    @Test func recordsRoundTripByTheirExactBytes() async throws {
        let store = InMemoryTokenStore()
        let composed = ClientRecordKey(kind: "resource", name: "https://caf\u{e9}.example/")
        let decomposed = ClientRecordKey(kind: "resource", name: "https://cafe\u{301}.example/")
        #expect(try await store.loadRecord(composed) == nil)
        try await store.saveRecord(Data("a".utf8), for: composed)
        #expect(try await store.loadRecord(composed) == Data("a".utf8))
        #expect(try await store.loadRecord(decomposed) == nil)
        try await store.saveRegistration(FileTokenStoreRecordsTests.registration)
        #expect(try await store.loadRegistration(issuer: "https://id.example") == FileTokenStoreRecordsTests.registration)
        try await store.deleteRecord(composed)
        #expect(try await store.loadRecord(composed) == nil)
        #expect(store.accounts.isEmpty, "records are not accounts")
    }
}
