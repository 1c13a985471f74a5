import ChildProcesses
import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// What is particular to ``FileTokenStore``'s account lock: a private lock
/// file per account (by exact bytes) and a lock that another process holds
/// and the kernel releases when it dies. The contract every store keeps is
/// in ``TokenStoreLockContractTests``. Timings are bounded generously: the
/// machine running the tests may be slow and busy.
@Suite struct FileTokenStoreLockTests {
    @Test func accountsDifferingOnlyInUnicodeCompositionHaveSeparateLockFiles() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        try await store.withLock(account: "Jos\u{E9}", timeout: .seconds(10)) {}
        try await store.withLock(account: "Jose\u{301}", timeout: .seconds(10)) {}

        #expect(try scratch.storeEntries() == ["Jos%C3%A9.lock", "Jose%CC%81.lock"])
    }

    @Test func theLockFileIsTheTokenFileNameWithLockForTokenAndIsPrivate() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        try await store.withLock(account: "alice@example.com", timeout: .seconds(10)) {}

        #expect(try FileTokenStore.fileName(for: "alice@example.com") == "alice%40example%2Ecom.token")
        #expect(try scratch.storeEntries() == ["alice%40example%2Ecom.lock"])
        #expect(StoreFixtures.mode(of: scratch.storePath + "/alice%40example%2Ecom.lock") == 0o600)
    }

    /// The umask is process-wide and tests run in parallel: this one sets it in a child process.
    /// 0 would leave a lock file others can write; 0o277 one its owner cannot open again.
    @Test func theLockFileIsCreated0600WhateverTheUmask() async {
        await #expect(processExitsWith: .success) {
            for mask: mode_t in [0, 0o022, 0o277, 0o777] {
                let scratch = try ScratchDirectory()
                let store = try FileTokenStore(directory: scratch.storePath)
                let previous = umask(mask)
                try await store.withLock(account: "alice", timeout: .seconds(10)) {}
                umask(previous)
                guard StoreFixtures.mode(of: scratch.storePath + "/alice.lock") == 0o600 else { exit(1) }
            }
        }
    }

    @Test func aLockFileOpenToOthersIsRefused() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try StoreFixtures.write("", to: scratch.storePath + "/alice.lock", mode: 0o644)

        let error = try await #require(throws: OAuth2Error.self) {
            try await store.withLock(account: "alice", timeout: .seconds(10)) {}
        }

        #expect(error.code == .storeError)
        #expect(error.message.contains("lock file of account \"alice\""))
        #expect(error.message.contains("mode 0644"))
    }

    @Test(.enabled(if: geteuid() == 0, "giving a file to another user needs root"))
    func aLockFileOwnedByAnotherUserIsRefused() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let lockFile = scratch.storePath + "/alice.lock"
        try StoreFixtures.write("", to: lockFile)
        try #require(chown(lockFile, FileTokenStorePermissionTests.otherUser, FileTokenStorePermissionTests.otherUser) == 0)

        let error = try await #require(throws: OAuth2Error.self) {
            try await store.withLock(account: "alice", timeout: .seconds(10)) {}
        }

        #expect(error.code == .storeError)
        #expect(error.message.contains("owned by uid 65534"))
    }

    @Test func aLockFileThatIsASymbolicLinkIsRefusedAndItsTargetNotCreated() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let target = scratch.path + "/elsewhere"
        #expect(symlink(target, scratch.storePath + "/alice.lock") == 0)

        let error = try await #require(throws: OAuth2Error.self) {
            try await store.withLock(account: "alice", timeout: .seconds(10)) {}
        }

        #expect(error.code == .storeError)
        #expect(error.message.contains("symbolic link"))
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    /// Another process's lock, as another swift-oauth2 process would hold it,
    /// and its release by the kernel when that process dies.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/flock"), "needs util-linux flock"))
    func aChildProcessHoldingTheLockBlocksTheStoreUntilItIsKilled() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        // Created by the store first: flock(1) would create it 0644, which the store refuses.
        try await store.withLock(account: "alice", timeout: .seconds(10)) {}
        // --no-fork: flock execs sleep, so the process holding the lock is the
        // one killed (by default flock forks, and sleep inherits the lock).
        // Killed and reaped when the test ends, however it ends.
        let child = try ChildProcess("/usr/bin/flock", ["--no-fork", scratch.storePath + "/alice.lock", "sleep", "30"])
        try await Self.waitUntilLocked(store, account: "alice", by: child)

        let waiter = Task {
            try await store.withLock(account: "alice", timeout: .seconds(10)) { true }
        }
        try await Task.sleep(for: .milliseconds(200))
        child.send(SIGKILL)
        let ending = await child.exit()

        let entered = try await waiter.value
        #expect(entered, "got in before the 10 s timeout")
        #expect(ending == .signalled(SIGKILL))
    }

    /// Polls until the store cannot take the lock `child` is taking; fails if the child exits first.
    private static func waitUntilLocked(_ store: FileTokenStore, account: String, by child: ChildProcess) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        while clock.now < deadline {
            try #require(child.isRunning, "flock exited early")
            do throws(OAuth2Error) {
                try await store.withLock(account: account, timeout: .zero) {}
            } catch  where error.code == .lockTimeout {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the child did not take the lock within 20 s")
    }
}
