import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// What ``TokenStore/withLock(account:timeout:_:)`` promises, checked for
/// every store the framework ships: exclusion until release, a timeout that
/// ends in `lock_timeout`, one lock per account by exact bytes, cancellation,
/// and a body's error passed through with the lock released. Timings are
/// bounded generously: the machine running the tests may be slow and busy.
@Suite struct TokenStoreLockContractTests {
    /// The stores the holder and the waiter use.
    enum Setup: String, CaseIterable, CustomTestStringConvertible {
        case inMemory
        case oneFileStore
        /// Two store values on one directory: as two processes would be.
        case twoFileStoresOnOneDirectory

        var testDescription: String { rawValue }

        /// The holder's store, the waiter's store, and the directory to keep alive meanwhile.
        func make() throws -> (holder: any TokenStore, waiter: any TokenStore, scratch: ScratchDirectory?) {
            switch self {
            case .inMemory:
                let store = InMemoryTokenStore()
                return (store, store, nil)
            case .oneFileStore:
                let scratch = try ScratchDirectory()
                let store = try FileTokenStore(directory: scratch.storePath)
                return (store, store, scratch)
            case .twoFileStoresOnOneDirectory:
                let scratch = try ScratchDirectory()
                return (try FileTokenStore(directory: scratch.storePath), try FileTokenStore(directory: scratch.storePath), scratch)
            }
        }
    }

    @Test(arguments: Setup.allCases)
    func theLockExcludesOthersUntilTheHolderReleases(setup: Setup) async throws {
        let (holderStore, waiterStore, scratch) = try setup.make()
        let holder = try await AccountLockHolder.hold(holderStore, account: "alice")

        let error = try await #require(throws: OAuth2Error.self) {
            try await waiterStore.withLock(account: "alice", timeout: .milliseconds(200)) {}
        }
        #expect(error.code == .lockTimeout)
        #expect(error.message.contains("account \"alice\""))

        try await holder.release()
        let entered = try await waiterStore.withLock(account: "alice", timeout: .seconds(10)) { true }
        #expect(entered)
        _ = scratch
    }

    @Test(arguments: Setup.allCases)
    func differentAccountsDoNotBlockEachOther(setup: Setup) async throws {
        let (holderStore, waiterStore, scratch) = try setup.make()
        let holder = try await AccountLockHolder.hold(holderStore, account: "alice")

        let entered = try await waiterStore.withLock(account: "bob", timeout: .milliseconds(200)) { true }

        #expect(entered)
        try await holder.release()
        _ = scratch
    }

    @Test(arguments: Setup.allCases)
    func accountsDifferingOnlyInUnicodeCompositionHaveSeparateLocks(setup: Setup) async throws {
        let (holderStore, waiterStore, scratch) = try setup.make()
        let holder = try await AccountLockHolder.hold(holderStore, account: "Jos\u{E9}")

        let entered = try await waiterStore.withLock(account: "Jose\u{301}", timeout: .milliseconds(200)) { true }

        #expect(entered)
        try await holder.release()
        _ = scratch
    }

    @Test(arguments: Setup.allCases)
    func aWaiterWhoseTaskIsCancelledEndsWithCancelledPromptly(setup: Setup) async throws {
        let (holderStore, waiterStore, scratch) = try setup.make()
        let holder = try await AccountLockHolder.hold(holderStore, account: "alice")
        let waiter = Task {
            try await waiterStore.withLock(account: "alice", timeout: .seconds(60)) {}
        }
        // Let it start waiting; cancelling before it does would end it the same way.
        try await Task.sleep(for: .milliseconds(100))
        let clock = ContinuousClock()
        let cancelled = clock.now

        waiter.cancel()
        let error = try await #require(throws: OAuth2Error.self) { try await waiter.value }

        #expect(error.code == .cancelled)
        #expect(clock.now - cancelled < .seconds(10))
        try await holder.release()
        _ = scratch
    }

    @Test(arguments: Setup.allCases)
    func withLockRethrowsTheBodysErrorAndReleasesTheLock(setup: Setup) async throws {
        let (holderStore, waiterStore, scratch) = try setup.make()

        let error = await #expect(throws: OAuth2Error.self) {
            try await holderStore.withLock(account: "alice", timeout: .seconds(10)) { () async throws(OAuth2Error) in
                throw OAuth2Error(code: .invalidRequest, message: "the body failed")
            }
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == "the body failed")

        let entered = try await waiterStore.withLock(account: "alice", timeout: .zero) { true }
        #expect(entered)
        _ = scratch
    }
}
