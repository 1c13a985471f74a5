import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// Round trips, account names and concurrency; each test has its own fresh directory.
@Suite struct FileTokenStoreTests {
    @Test func plaintextRoundTripKeepsEveryField() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let token = StoreFixtures.token(1)

        try await store.save(token, account: "alice")

        #expect(try await store.load(account: "alice") == token)
    }

    @Test func anyDateSurvivesTheRoundTripToWithinAMicrosecond() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let expiry = Date(timeIntervalSinceNow: 3600.123456789)

        try await store.save(AccessToken(accessToken: Secret("x"), expiresAt: expiry), account: "alice")

        let loaded = try #require(try await store.load(account: "alice")?.expiresAt)
        #expect(abs(loaded.timeIntervalSince(expiry)) < 1e-6)
    }

    @Test func aPlaintextFileIsTheDocumentedVersion2Envelope() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        try await store.save(StoreFixtures.token(0), account: "alice")

        let object = try JSONSerialization.jsonObject(with: Data(StoreFixtures.read(try scratch.storeFile("alice"))))
        let envelope = try #require(object as? [String: Any])
        #expect(Set(envelope.keys) == ["format", "version", "token"])
        #expect(envelope["format"] as? String == "swift-oauth2-token")
        #expect(envelope["version"] as? Int == 2)
        let token = try #require(envelope["token"] as? [String: Any])
        #expect(token["expiresAt"] as? Double == 1_700_000_000.25)
    }

    /// A file written by this version must stay readable by later ones.
    @Test func aVersion1FileWrittenByHandLoads() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try StoreFixtures.write(
            #"""
            {"format":"swift-oauth2-token","version":1,"token":{"accessToken":"abc","tokenType":"bearer",
            "expiresAt":1700000000,"refreshToken":"def","scopes":["a","b"],"extraFields":{"x":[1,null,"y"]}}}
            """#, to: try scratch.storeFile("alice"))

        let token = try await store.load(account: "alice")

        #expect(
            token
                == AccessToken(
                    accessToken: Secret("abc"), tokenType: "bearer", expiresAt: Date(timeIntervalSince1970: 1_700_000_000),
                    refreshToken: Secret("def"), scopes: ["a", "b"], extraFields: ["x": .array([.number(1), .null, .string("y")])]
                ))
    }

    @Test func loadOfAnAccountWithoutAFileIsNil() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        #expect(try await store.load(account: "nobody") == nil)
    }

    @Test func saveReplacesThePreviousToken() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        try await store.save(StoreFixtures.token(1), account: "alice")
        try await store.save(StoreFixtures.token(2), account: "alice")

        #expect(try await store.load(account: "alice") == StoreFixtures.token(2))
        #expect(try scratch.storeEntries() == ["alice.token"])
    }

    @Test func deleteRemovesTheTokenAndDeletingAMissingAccountIsFine() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(1), account: "alice")

        try await store.delete(account: "alice")
        try await store.delete(account: "alice")
        try await store.delete(account: "never-saved")

        #expect(try await store.load(account: "alice") == nil)
        #expect(try scratch.storeEntries().isEmpty)
    }

    @Test func anotherStoreOnTheSameDirectorySeesSavedTokens() async throws {
        let scratch = try ScratchDirectory()
        try await FileTokenStore(directory: scratch.storePath).save(StoreFixtures.token(3), account: "alice")

        let reopened = try FileTokenStore(directory: scratch.storePath)

        #expect(try await reopened.load(account: "alice") == StoreFixtures.token(3))
    }

    @Test func emptyAccountNameIsRejected() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        await #expect(throws: OAuth2Error.self) { try await store.save(StoreFixtures.token(1), account: "") }
        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "") }
        #expect(error.code == .storeError)
        #expect(error.message.contains("account name is empty"))
        await #expect(throws: OAuth2Error.self) { try await store.delete(account: "") }
    }

    @Test func fileNamesArePercentEncoded() throws {
        #expect(try FileTokenStore.fileName(for: "alice@example.com") == "alice%40example%2Ecom.token")
        #expect(try FileTokenStore.fileName(for: "../x") == "%2E%2E%2Fx.token")
        #expect(try FileTokenStore.fileName(for: "é") == "%C3%A9.token")
        #expect(try FileTokenStore.fileName(for: "A-b_9") == "A-b_9.token")
    }

    @Test func aVeryLongAccountNameIsStoredUnderItsHash() throws {
        let name = try FileTokenStore.fileName(for: String(repeating: "é", count: 200))

        #expect(name.hasPrefix("+sha256-"))
        #expect(name.utf8.count == "+sha256-".utf8.count + 64 + ".token".utf8.count)
    }

    @Test func hostileAndUnusualAccountNamesMapToDistinctFilesInsideTheDirectory() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let accounts = [
            "a/b", "a%2Fb", "a%2fb", "..", ".", "../escape", "../../etc/passwd", "/absolute", ".hidden",
            "with space", "ünïcödé", "e\u{301}", "\u{E9}", "A", "a", "a.token", "a\u{0}b", "line\nbreak",
            "+sha256-abc", String(repeating: "x", count: 300), String(repeating: "x", count: 301),
            String(repeating: "日本", count: 120),
        ]

        for (index, account) in accounts.enumerated() {
            try await store.save(StoreFixtures.token(index), account: account)
        }

        for (index, account) in accounts.enumerated() {
            #expect(try await store.load(account: account) == StoreFixtures.token(index), "account \(account.debugDescription)")
        }
        let entries = try scratch.storeEntries()
        #expect(entries.count == accounts.count)
        #expect(entries.allSatisfy { !$0.hasPrefix(".") && !$0.contains("/") && $0.utf8.count <= 255 })
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["tokens"])
    }

    @Test func concurrentSavesAndLoadsOfOneAccountAlwaysSeeACompleteToken() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(StoreFixtures.token(0), account: "shared")
        let written = Set((0...40).map(StoreFixtures.token))

        let loads = try await withThrowingTaskGroup(of: AccessToken?.self) { group in
            for index in 1...40 {
                group.addTask {
                    try await store.save(StoreFixtures.token(index), account: "shared")
                    return nil
                }
                group.addTask { try await store.load(account: "shared") ?? AccessToken(accessToken: Secret("missing")) }
            }
            var loads: [AccessToken] = []
            for try await loaded in group {
                if let loaded { loads.append(loaded) }
            }
            return loads
        }

        #expect(loads.count == 40)
        #expect(loads.allSatisfy(written.contains))
        #expect(try written.contains(#require(try await store.load(account: "shared"))))
        #expect(try scratch.storeEntries() == ["shared.token"])
    }

    @Test func concurrentSavesOfManyAccountsKeepEachAccountsOwnToken() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<32 {
                group.addTask { try await store.save(StoreFixtures.token(index), account: "user-\(index)") }
            }
            try await group.waitForAll()
        }

        for index in 0..<32 {
            #expect(try await store.load(account: "user-\(index)") == StoreFixtures.token(index))
        }
        #expect(try scratch.storeEntries().count == 32)
    }
}

// MARK: - Support shared by the store tests

/// A fresh directory under /tmp (or `parent`) for one test, removed when the test ends.
///
/// The store itself lives in `tokens` inside it, so tests can check the store
/// creates its directory and writes nothing next to it.
final class ScratchDirectory {
    let path: String

    init(under parent: String = "/tmp") throws {
        var template = Array("\(parent)/oauth2-store-test-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap(mkdtemp) }) else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        path = String(cString: made)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    var storePath: String { path + "/tokens" }

    func storeFile(_ account: String) throws -> String {
        try storePath + "/" + FileTokenStore.fileName(for: account)
    }

    /// The names in the store's directory, sorted.
    func storeEntries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: storePath).sorted()
    }
}

enum StoreFixtures {
    static let accessTokenValue = "at-SECRET-access-9f8e7d6c5b4a"
    static let refreshTokenValue = "rt-SECRET-refresh-1a2b3c4d5e6f"
    static let idTokenValue = "eyJ-SECRET-id-token-77aa88bb"

    /// A token full of secrets, distinct for each `index`.
    static func token(_ index: Int) -> AccessToken {
        AccessToken(
            accessToken: Secret("\(accessTokenValue)-\(index)"),
            tokenType: "Bearer",
            expiresAt: Date(timeIntervalSince1970: 1_700_000_000.25 + Double(index)),
            refreshToken: Secret("\(refreshTokenValue)-\(index)"),
            scopes: ["read", "write:all"],
            extraFields: ["id_token": .string(idTokenValue), "index": .number(Double(index)), "nested": .object(["ok": .bool(true)])]
        )
    }

    static func randomKeyBytes() -> [UInt8] {
        (0..<32).map { _ in UInt8.random(in: .min ... .max) }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The permission bits of `path` itself (a link is not followed).
    static func mode(of path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    static func write(_ text: String, to path: String, mode: mode_t = 0o600) throws {
        try write(Array(text.utf8), to: path, mode: mode)
    }

    /// Writes a file with exactly `mode`, whatever the umask.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw POSIXError(.EIO)
        }
        guard chmod(path, mode) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
