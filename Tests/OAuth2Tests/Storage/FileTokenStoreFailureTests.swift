import ChildProcesses
import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// Crashes, full disks and damaged files: the old token survives a failed
/// save, and a file that cannot be read is an error, never a silent logout.
@Suite struct FileTokenStoreFailureTests {
    @Test(arguments: [
        ("garbage bytes", [UInt8]([0xFF, 0x00, 0x13, 0x37, 0xC0, 0xFE]), "is corrupt: it is not a JSON object"),
        ("an empty file", [], "is corrupt: it is not a JSON object"),
        ("a JSON array", Array("[1,2]".utf8), "is corrupt: it is not a JSON object"),
        ("another JSON object", Array(#"{"hello":"world"}"#.utf8), "is not a swift-oauth2 token file"),
        ("no version", Array(#"{"format":"swift-oauth2-token"}"#.utf8), "has no format version"),
        ("a future version", Array(#"{"format":"swift-oauth2-token","version":3}"#.utf8), "uses format version 3"),
        ("no token", Array(#"{"format":"swift-oauth2-token","version":1}"#.utf8), "holds neither a token nor encrypted data"),
        (
            "a token without its access token",
            Array(#"{"format":"swift-oauth2-token","version":1,"token":{"tokenType":"Bearer","scopes":[],"extraFields":{}}}"#.utf8),
            #"field "token.accessToken" is missing or invalid"#
        ),
    ])
    func aDamagedFileIsAClearErrorNotAMissingToken(what: String, contents: [UInt8], expected: String) async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try StoreFixtures.write(contents, to: try scratch.storeFile("alice"))

        let error = try await #require(throws: OAuth2Error.self, "\(what)") { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"alice\""))
        #expect(error.message.contains(expected), "\(what): \(error.message)")
    }

    @Test func aTruncatedFileIsAClearError() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")
        let file = try scratch.storeFile("alice")
        let contents = try StoreFixtures.read(file)
        try StoreFixtures.write(Array(contents.prefix(contents.count / 2)), to: file)

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("is corrupt"))
    }

    @Test func aReaderDuringASaveSeesTheOldTokenUntilTheRename() async throws {
        let scratch = try ScratchDirectory()
        let reader = try FileTokenStore(directory: scratch.storePath)
        try await reader.save(StoreFixtures.token(1), account: "alice")
        let seen = LockedValue<(token: AccessToken?, temporaryMode: mode_t?)>((nil, nil))
        let storePath = scratch.storePath
        let writer = try FileTokenStore(
            directory: scratch.storePath, encryption: .plaintext,
            hooks: .init { temporary in
                let token = try await reader.load(account: "alice")
                let mode = StoreFixtures.mode(of: storePath + "/" + temporary)
                seen.withLock { $0 = (token, mode) }
            })

        try await writer.save(StoreFixtures.token(2), account: "alice")

        let (during, temporaryMode) = seen.withLock { $0 }
        #expect(during == StoreFixtures.token(1))
        #expect(temporaryMode == 0o600)
        #expect(try await reader.load(account: "alice") == StoreFixtures.token(2))
    }

    @Test func aSaveThatFailsBeforeTheRenameLeavesTheOldTokenAndNoTemporaryFile() async throws {
        struct SimulatedFailure: Error {}
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(
            directory: scratch.storePath, encryption: .plaintext,
            hooks: .init { _ in
                throw SimulatedFailure()
            })
        try await FileTokenStore(directory: scratch.storePath).save(StoreFixtures.token(1), account: "alice")

        let error = try await #require(throws: OAuth2Error.self) { try await store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("the previous token is unchanged"))
        #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
        #expect(try scratch.storeEntries() == ["alice.token"])
    }

    /// A crash between writing the temporary file and renaming it leaves the
    /// temporary file behind, complete or not; this writes one exactly so.
    @Test func aTemporaryFileLeftByACrashIsIgnoredAndALaterSaveSucceeds() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")
        let complete = scratch.storePath + "/.alice.token.0123456789ABCDEF.tmp"
        let torn = scratch.storePath + "/.alice.token.FEDCBA9876543210.tmp"
        try StoreFixtures.write(Array(#"{"format":"swift-oauth2-token","version":1,"token":{"accessToken":"new"}}"#.utf8), to: complete)
        try StoreFixtures.write(Array(#"{"format":"swift-oau"#.utf8), to: torn)

        #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
        try await store.save(StoreFixtures.token(2), account: "alice")

        #expect(try await store.load(account: "alice") == StoreFixtures.token(2))
    }

    @Test func staleTemporaryFilesAreRemovedAndFreshOnesKept() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")
        let stale = scratch.storePath + "/.alice.token.0123456789ABCDEF.tmp"
        let fresh = scratch.storePath + "/.alice.token.FEDCBA9876543210.tmp"
        try StoreFixtures.write("{", to: stale)
        try StoreFixtures.write("{", to: fresh)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: stale)

        let removed = try store.removeStaleTemporaryFiles()

        #expect(removed == 1)
        #expect(try scratch.storeEntries() == [".alice.token.FEDCBA9876543210.tmp", "alice.token"])
    }

    /// Sets a file's modification time, as `touch -d @seconds` does.
    private func setModificationTime(_ seconds: Int, of path: String) throws {
        let times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        guard utimensat(AT_FDCWD, path, times, 0) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    // tmpfs keeps any 64-bit time, where ext4 clamps to 1901–2446: the age
    // of a temporary file dated Int.min seconds overflowed and trapped.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm")))
    func aTemporaryFileFromTheFarPastIsStaleAndOneFromTheFarFutureIsKept() async throws {
        let scratch = try ScratchDirectory(under: "/dev/shm")
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")
        let past = scratch.storePath + "/.alice.token.0123456789ABCDEF.tmp"
        let future = scratch.storePath + "/.alice.token.FEDCBA9876543210.tmp"
        try StoreFixtures.write("{", to: past)
        try StoreFixtures.write("{", to: future)
        try setModificationTime(Int.min, of: past)
        try setModificationTime(Int.max, of: future)
        var info = stat()
        #expect(stat(past, &info) == 0 && info.st_mtim.tv_sec == Int.min, "the file system kept the time")

        let removed = try store.removeStaleTemporaryFiles()

        #expect(removed == 1)
        #expect(try scratch.storeEntries() == [".alice.token.FEDCBA9876543210.tmp", "alice.token"])
        #expect(try FileTokenStore(directory: scratch.storePath).removeStaleTemporaryFiles() == 0, "a store opens on them too")
    }

    @Test func anAgeIsWorkedOutWithoutOverflowForAnyTimes() {
        #expect(FileTokenStore.isAtLeast(300, secondsOld: .min, at: 1_800_000_000))
        #expect(FileTokenStore.isAtLeast(300, secondsOld: .min, at: .max))
        #expect(!FileTokenStore.isAtLeast(300, secondsOld: .max, at: 1_800_000_000))
        #expect(!FileTokenStore.isAtLeast(300, secondsOld: .max, at: .min))
        #expect(FileTokenStore.isAtLeast(300, secondsOld: 1_800_000_000 - 300, at: 1_800_000_000))
        #expect(!FileTokenStore.isAtLeast(300, secondsOld: 1_800_000_000 - 299, at: 1_800_000_000))
    }

    @Test func openingAStoreRemovesStaleTemporaryFiles() async throws {
        let scratch = try ScratchDirectory()
        try await FileTokenStore(directory: scratch.storePath).save(StoreFixtures.token(1), account: "alice")
        let stale = scratch.storePath + "/.alice.token.0123456789ABCDEF.tmp"
        try StoreFixtures.write("{", to: stale)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: stale)

        let reopened = try FileTokenStore(directory: scratch.storePath)

        #expect(try scratch.storeEntries() == ["alice.token"])
        #expect(try await reopened.load(account: "alice") == StoreFixtures.token(1))
    }

    @Test func aTokenTooLargeToStoreIsRefusedAndTheOldOneKept() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")
        var huge = StoreFixtures.token(2)
        huge.extraFields["padding"] = .string(String(repeating: "p", count: FileTokenStore.maximumFileSize))

        let error = try await #require(throws: OAuth2Error.self) { try await store.save(huge, account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("over the store's limit"))
        #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
    }

    @Test(.enabled(if: SmallFileSystem.canMount, "mounting a tmpfs needs CAP_SYS_ADMIN"))
    func aSaveOnAFullDiskThrowsAndKeepsTheOldToken() async throws {
        let scratch = try ScratchDirectory()
        let mountPoint = scratch.path + "/small"
        let disk = try SmallFileSystem(at: mountPoint)
        defer { disk.unmount() }
        let store = try FileTokenStore(directory: mountPoint + "/tokens")
        try await store.save(StoreFixtures.token(1), account: "alice")
        let filler = mountPoint + "/filler"
        try SmallFileSystem.fill(filler)

        let error = try await #require(throws: OAuth2Error.self) { try await store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("No space left on device"))
        #expect(error.message.contains("the previous token is unchanged"))
        #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
        #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint + "/tokens") == ["alice.token"])
        #expect(unlink(filler) == 0)
        try await store.save(StoreFixtures.token(2), account: "alice")
        #expect(try await store.load(account: "alice") == StoreFixtures.token(2))
    }

    @Test func noStoreErrorShowsATokenOrAKey() async throws {
        let scratch = try ScratchDirectory()
        let keyBytes = StoreFixtures.randomKeyBytes()
        let keyHex = StoreFixtures.hex(keyBytes)
        let keyBase64 = Data(keyBytes).base64EncodedString()
        let encrypted = try FileTokenStoreEncryptionTests.store(scratch, keyBytes)
        let plain = try FileTokenStore(directory: scratch.storePath)
        var errors: [OAuth2Error] = []
        func collect(_ body: () async throws -> Void) async {
            do { try await body() } catch let error as OAuth2Error { errors.append(error) } catch {}
        }

        try await encrypted.save(StoreFixtures.token(1), account: "enc")
        try await plain.save(StoreFixtures.token(1), account: "plain")
        try await plain.save(StoreFixtures.token(1), account: "exposed")
        #expect(chmod(try scratch.storeFile("exposed"), 0o644) == 0)
        let half = try StoreFixtures.read(try scratch.storeFile("plain"))
        try StoreFixtures.write(Array(half.prefix(half.count - 30)), to: try scratch.storeFile("truncated"))
        try StoreFixtures.write(try StoreFixtures.read(try scratch.storeFile("enc")), to: try scratch.storeFile("moved"))
        await collect { _ = try await plain.load(account: "enc") }
        await collect { _ = try await encrypted.load(account: "plain") }
        await collect { _ = try await FileTokenStoreEncryptionTests.store(scratch, StoreFixtures.randomKeyBytes()).load(account: "enc") }
        await collect { _ = try await plain.load(account: "exposed") }
        await collect { _ = try await plain.load(account: "truncated") }
        await collect { _ = try await encrypted.load(account: "moved") }
        await collect { _ = try FileTokenStore.EncryptionKey(text: String(keyHex.dropLast())) }
        await collect { _ = try FileTokenStore.EncryptionKey(text: keyBase64 + "AAAA") }
        let exposedKey = scratch.path + "/exposed.key"
        try StoreFixtures.write(keyHex, to: exposedKey, mode: 0o644)
        await collect { _ = try FileTokenStore.EncryptionKey.fromFile(atPath: exposedKey) }

        #expect(errors.count == 9)
        let secrets = [StoreFixtures.accessTokenValue, StoreFixtures.refreshTokenValue, StoreFixtures.idTokenValue, keyHex, keyBase64]
        for error in errors {
            #expect(error.code == .storeError)
            for secret in secrets {
                #expect(!error.description.contains(secret), "\(error.description)")
                #expect(!String(reflecting: error).contains(secret))
            }
        }
    }
}

/// A 16 KiB tmpfs, for filling a disk without filling the machine's.
struct SmallFileSystem {
    let path: String

    /// Whether this process may mount one (root with CAP_SYS_ADMIN).
    static let canMount: Bool = {
        guard let scratch = try? ScratchDirectory(), let disk = try? SmallFileSystem(at: scratch.path + "/probe") else { return false }
        disk.unmount()
        return true
    }()

    init(at path: String) throws {
        guard mkdir(path, 0o700) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", path]) else {
            throw POSIXError(.EPERM)
        }
        self.path = path
    }

    func unmount() {
        _ = Self.run("/bin/umount", [path])
    }

    /// Writes `path` until the file system has no space left.
    static func fill(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x41, count: 1024)
        for _ in 0..<1024 where chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    private static func run(_ executable: String, _ arguments: [String]) -> Bool {
        (try? ChildProcess(executable, arguments, stderr: .null).waitUntilExit()) == .exited(0)
    }
}
