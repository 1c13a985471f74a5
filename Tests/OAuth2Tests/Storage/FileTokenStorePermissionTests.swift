import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// Modes, owners and links: the store keeps its files private and refuses
/// files others could have read or planted.
///
/// The umask is process-wide and tests run in parallel, so the one test that
/// changes it does so in a child process (an exit test): no other test ever
/// runs under its umask.
@Suite struct FileTokenStorePermissionTests {
    /// A user id that is not ours (nobody).
    static let otherUser: uid_t = 65534

    @Test func createsTheDirectory0700AndFiles0600() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        try await store.save(StoreFixtures.token(1), account: "alice")

        #expect(StoreFixtures.mode(of: scratch.storePath) == 0o700)
        #expect(StoreFixtures.mode(of: try scratch.storeFile("alice")) == 0o600)
    }

    /// A plaintext store holds a DPoP-bound token's private key in the clear,
    /// like its refresh token: in a 0600 file of a 0700 directory.
    @Test func aPlaintextFileWithADPoPKeyIs0600() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let key = try DPoPKey.generate()
        var token = StoreFixtures.token(1)
        token.dpopKey = key
        try await store.save(token, account: "alice")

        let encodedKey = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(key)) as? [String: Any])
        let contents = String(decoding: try StoreFixtures.read(try scratch.storeFile("alice")), as: UTF8.self)
        #expect(contents.contains(try #require(encodedKey["d"] as? String)))
        #expect(StoreFixtures.mode(of: scratch.storePath) == 0o700)
        #expect(StoreFixtures.mode(of: try scratch.storeFile("alice")) == 0o600)
        #expect(try await store.load(account: "alice")?.dpopKey == key)
    }

    @Test func createsMissingParentDirectoriesPrivate() throws {
        let scratch = try ScratchDirectory()

        _ = try FileTokenStore(directory: scratch.path + "/a/b/tokens")

        #expect(StoreFixtures.mode(of: scratch.path + "/a") == 0o700)
        #expect(StoreFixtures.mode(of: scratch.path + "/a/b") == 0o700)
        #expect(StoreFixtures.mode(of: scratch.path + "/a/b/tokens") == 0o700)
    }

    /// Another user of a shared parent swaps a directory the store just made
    /// for a link to a place of theirs, between the store's `mkdir` and its
    /// next step: the store must neither follow it nor create anything there.
    @Test(arguments: ["/a", "/a/b", "/a/b/tokens"])
    func aDirectorySwappedForALinkWhileTheStoreMakesItsPathIsRefused(swapped: String) throws {
        let scratch = try ScratchDirectory()
        let elsewhere = scratch.path + "/elsewhere"
        #expect(mkdir(elsewhere, 0o700) == 0)
        let target = scratch.path + swapped
        let hooks = FileTokenStore.Hooks(afterCreatingDirectory: { path in
            guard path == target else { return }
            _ = rmdir(path)
            _ = symlink(elsewhere, path)
        })

        let error = try #require(throws: OAuth2Error.self) {
            try FileTokenStore(directory: scratch.path + "/a/b/tokens", encryption: .plaintext, hooks: hooks)
        }

        #expect(error.code == .storeError)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        #expect(StoreFixtures.mode(of: elsewhere) == 0o700)
    }

    @Test func anExistingLinkInThePathIsTheUsersOwnAndFollowed() async throws {
        let scratch = try ScratchDirectory()
        let real = scratch.path + "/real"
        #expect(mkdir(real, 0o700) == 0)
        #expect(symlink(real, scratch.path + "/link") == 0)

        let store = try FileTokenStore(directory: scratch.path + "/link/tokens")
        try await store.save(StoreFixtures.token(1), account: "alice")

        #expect(StoreFixtures.mode(of: real + "/tokens") == 0o700)
        #expect(try await FileTokenStore(directory: real + "/tokens").load(account: "alice") == StoreFixtures.token(1))
    }

    @Test func aRelativePathIsMadeUnderTheWorkingDirectory() throws {
        let scratch = try ScratchDirectory()
        // Up to the root from wherever the tests run (`..` at the root stays there), then down.
        let relative = String(repeating: "../", count: 64) + scratch.path.dropFirst() + "/./rel/tokens"

        _ = try FileTokenStore(directory: relative)

        #expect(StoreFixtures.mode(of: scratch.path + "/rel/tokens") == 0o700)
    }

    @Test func directoryAndFilesArePrivateWhateverTheUmask() async {
        await #expect(processExitsWith: .success) {
            for mask: mode_t in [0, 0o002, 0o022, 0o277, 0o777] {
                let scratch = try ScratchDirectory()
                let previous = umask(mask)
                let store = try FileTokenStore(directory: scratch.storePath)
                try await store.save(StoreFixtures.token(1), account: "alice")
                try await store.save(StoreFixtures.token(2), account: "alice")
                umask(previous)
                guard StoreFixtures.mode(of: scratch.storePath) == 0o700,
                    StoreFixtures.mode(of: try scratch.storeFile("alice")) == 0o600,
                    try await store.load(account: "alice") == StoreFixtures.token(2)
                else {
                    exit(1)
                }
            }
        }
    }

    @Test func acceptsAnExistingPrivateDirectory() async throws {
        let scratch = try ScratchDirectory()
        #expect(mkdir(scratch.storePath, 0o700) == 0)

        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")

        #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
    }

    @Test func refusesAnExistingDirectoryOpenToOthersAndLeavesItsModeAlone() throws {
        let scratch = try ScratchDirectory()
        #expect(mkdir(scratch.storePath, 0o700) == 0)
        #expect(chmod(scratch.storePath, 0o755) == 0)

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore(directory: scratch.storePath) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("mode 0755"))
        #expect(error.message.contains("chmod 700"))
        #expect(StoreFixtures.mode(of: scratch.storePath) == 0o755)
    }

    @Test func refusesADirectoryOwnedByAnotherUser() throws {
        let scratch = try ScratchDirectory()
        #expect(mkdir(scratch.storePath, 0o700) == 0)
        try #require(chown(scratch.storePath, Self.otherUser, Self.otherUser) == 0)

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore(directory: scratch.storePath) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("owned by uid 65534"))
    }

    @Test func refusesAPathThatIsAFile() throws {
        let scratch = try ScratchDirectory()
        try StoreFixtures.write("not a directory", to: scratch.storePath)

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore(directory: scratch.storePath) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("not a directory"))
    }

    @Test func refusesAGroupReadableTokenFile() async throws {
        let (scratch, store) = try await Self.storeWithAlice()
        #expect(chmod(try scratch.storeFile("alice"), 0o640) == 0)

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"alice\""))
        #expect(error.message.contains("mode 0640"))
    }

    @Test func refusesAWorldWritableTokenFile() async throws {
        let (scratch, store) = try await Self.storeWithAlice()
        #expect(chmod(try scratch.storeFile("alice"), 0o602) == 0)

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("mode 0602"))
    }

    @Test func refusesATokenFileOwnedByAnotherUser() async throws {
        let (scratch, store) = try await Self.storeWithAlice()
        try #require(chown(try scratch.storeFile("alice"), Self.otherUser, Self.otherUser) == 0)

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"alice\""))
        #expect(error.message.contains("owned by uid 65534"))
    }

    @Test func refusesASymbolicLinkEvenToAGoodTokenFile() async throws {
        let (scratch, store) = try await Self.storeWithAlice()
        let elsewhere = scratch.path + "/elsewhere.token"
        #expect(rename(try scratch.storeFile("alice"), elsewhere) == 0)
        #expect(symlink(elsewhere, try scratch.storeFile("alice")) == 0)

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("symbolic link"))
    }

    @Test func refusesSomethingThatIsNotARegularFile() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        #expect(mkfifo(try scratch.storeFile("alice"), 0o600) == 0)

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("not a regular file"))
    }

    @Test func refusesAFileOverTheSizeLimit() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try StoreFixtures.write([UInt8](repeating: 0x20, count: FileTokenStore.maximumFileSize + 1), to: try scratch.storeFile("alice"))

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("over the limit"))
    }

    @Test func aSaveReplacesAnExposedFileWithAPrivateOne() async throws {
        let (scratch, store) = try await Self.storeWithAlice()
        #expect(chmod(try scratch.storeFile("alice"), 0o644) == 0)

        try await store.save(StoreFixtures.token(2), account: "alice")

        #expect(StoreFixtures.mode(of: try scratch.storeFile("alice")) == 0o600)
        #expect(try await store.load(account: "alice") == StoreFixtures.token(2))
    }

    private static func storeWithAlice() async throws -> (ScratchDirectory, FileTokenStore) {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")
        return (scratch, store)
    }
}
