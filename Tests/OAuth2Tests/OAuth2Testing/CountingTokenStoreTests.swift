import OAuth2
import OAuth2Testing
import Testing

@Suite struct CountingTokenStoreTests {
    @Test func countsEveryCallItPassesOn() async throws {
        let store = CountingTokenStore()

        try await store.save(StoreFixtures.token(1), account: "alice")
        _ = try await store.load(account: "alice")
        try await store.withLock(account: "alice", timeout: .seconds(10)) { () async throws(OAuth2Error) in
            try await store.delete(account: "alice")
        }

        #expect((store.saveCount, store.loadCount, store.deleteCount, store.lockCount) == (1, 1, 1, 1))
        #expect(try await store.base.load(account: "alice") == nil)
    }

    @Test func aCallTheBaseStoreRefusesCountsAndItsErrorPassesThrough() async throws {
        let store = CountingTokenStore()

        let error = try await #require(throws: OAuth2Error.self) { try await store.save(StoreFixtures.token(1), account: "") }

        #expect(error.code == .storeError)
        #expect(store.saveCount == 1)
        #expect(store.base.accounts.isEmpty)
    }

    @Test func concurrentCallsAreAllCounted() async throws {
        let store = CountingTokenStore()

        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                group.addTask {
                    try await store.save(StoreFixtures.token(index), account: "user-\(index % 10)")
                    _ = try await store.load(account: "user-\(index % 10)")
                }
            }
            try await group.waitForAll()
        }

        #expect(store.saveCount == 100)
        #expect(store.loadCount == 100)
    }

    @Test func saysWhetherTheBaseStoreIsPersistent() throws {
        let directory = try ScratchDirectory()

        #expect(CountingTokenStore().isPersistent == false)
        #expect(CountingTokenStore(try FileTokenStore(directory: directory.storePath)).isPersistent == true)
    }
}
