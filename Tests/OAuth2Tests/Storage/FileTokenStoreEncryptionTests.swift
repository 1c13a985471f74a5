import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// AES-GCM files: round trips, wrong keys, missing keys, moved files, and the
/// three places a key comes from.
@Suite struct FileTokenStoreEncryptionTests {
    @Test func encryptedRoundTripKeepsEveryFieldAndHidesTheToken() async throws {
        let scratch = try ScratchDirectory()
        let store = try Self.store(scratch, StoreFixtures.randomKeyBytes())

        try await store.save(StoreFixtures.token(1), account: "alice")

        #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
        let contents = String(decoding: try StoreFixtures.read(try scratch.storeFile("alice")), as: UTF8.self)
        #expect(contents.contains("\"encryption\":\"AES-256-GCM\""))
        #expect(!contents.contains(StoreFixtures.accessTokenValue))
        #expect(!contents.contains(StoreFixtures.refreshTokenValue))
        #expect(!contents.contains(StoreFixtures.idTokenValue))
    }

    /// A DPoP-bound token's key is part of the sealed record (its account and
    /// binding the associated data), never in the clear envelope: the file
    /// shows neither the private key nor even the thumbprint, and the key
    /// comes back only when the box is opened, under the account it was sealed for.
    @Test func aDPoPKeyIsSealedWithItsToken() async throws {
        let scratch = try ScratchDirectory()
        let store = try Self.store(scratch, StoreFixtures.randomKeyBytes())
        let key = try DPoPKey.generate()
        var token = StoreFixtures.token(1)
        token.tokenType = "DPoP"
        token.dpopKey = key
        try await store.save(token, account: "alice")

        let bytes = try StoreFixtures.read(try scratch.storeFile("alice"))
        let contents = String(decoding: bytes, as: UTF8.self)
        let encodedKey = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(key)) as? [String: Any])
        let privateKey = try #require(encodedKey["d"] as? String)
        #expect(!contents.contains(privateKey))
        #expect(!contents.contains(key.thumbprint))
        #expect(!contents.contains("dpopKey"))
        let envelope = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(Set(envelope.keys).isSubset(of: ["binding", "encryption", "format", "keyID", "sealed", "version"]))

        #expect(try await store.load(account: "alice")?.dpopKey == key)
        // Under another account's name the box does not open, key and all.
        try FileManager.default.copyItem(atPath: try scratch.storeFile("alice"), toPath: try scratch.storeFile("mallory"))
        await #expect(throws: OAuth2Error.self) { try await store.load(account: "mallory") }
    }

    @Test func aWrongKeyIsAClearError() async throws {
        let scratch = try ScratchDirectory()
        try await Self.store(scratch, StoreFixtures.randomKeyBytes()).save(StoreFixtures.token(1), account: "alice")

        let other = try Self.store(scratch, StoreFixtures.randomKeyBytes())
        let error = try await #require(throws: OAuth2Error.self) { try await other.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"alice\""))
        #expect(error.message.contains("different key"))
    }

    @Test func anEncryptedFileOpenedWithoutAKeyIsAClearError() async throws {
        let scratch = try ScratchDirectory()
        try await Self.store(scratch, StoreFixtures.randomKeyBytes()).save(StoreFixtures.token(1), account: "alice")

        let plain = try FileTokenStore(directory: scratch.storePath)
        let error = try await #require(throws: OAuth2Error.self) { try await plain.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("is encrypted, and this store has no encryption key"))
    }

    @Test func aPlaintextFileIsRefusedByAStoreThatRequiresEncryption() async throws {
        let scratch = try ScratchDirectory()
        try await FileTokenStore(directory: scratch.storePath).save(StoreFixtures.token(1), account: "alice")

        let encrypted = try Self.store(scratch, StoreFixtures.randomKeyBytes())
        let error = try await #require(throws: OAuth2Error.self) { try await encrypted.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("is not encrypted, and this store requires encryption"))
    }

    @Test func aMigratingStoreReadsPlaintextAndEncryptsOnTheNextSave() async throws {
        let scratch = try ScratchDirectory()
        let keyBytes = StoreFixtures.randomKeyBytes()
        try await FileTokenStore(directory: scratch.storePath).save(StoreFixtures.token(1), account: "alice")
        let key = try FileTokenStore.EncryptionKey(bytes: keyBytes)
        let migrating = try FileTokenStore(directory: scratch.storePath, encryption: .aesGCM(key, acceptingPlaintextFiles: true))

        #expect(try await migrating.load(account: "alice") == StoreFixtures.token(1))
        try await migrating.save(StoreFixtures.token(2), account: "alice")

        #expect(try await Self.store(scratch, keyBytes).load(account: "alice") == StoreFixtures.token(2))
    }

    @Test func anEncryptedFileCopiedToAnotherAccountDoesNotDecrypt() async throws {
        let scratch = try ScratchDirectory()
        let store = try Self.store(scratch, StoreFixtures.randomKeyBytes())
        try await store.save(StoreFixtures.token(1), account: "alice")
        try StoreFixtures.write(try StoreFixtures.read(try scratch.storeFile("alice")), to: try scratch.storeFile("mallory"))

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "mallory") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"mallory\""))
        #expect(error.message.contains("written for another account"))
    }

    @Test func alteredCiphertextDoesNotDecrypt() async throws {
        let scratch = try ScratchDirectory()
        let store = try Self.store(scratch, StoreFixtures.randomKeyBytes())
        try await store.save(StoreFixtures.token(1), account: "alice")
        try Self.rewriteSealed(in: try scratch.storeFile("alice")) { sealed in
            sealed[sealed.count / 2] ^= 0x01
        }

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("the file was altered"))
    }

    @Test func truncatedCiphertextIsACorruptFile() async throws {
        let scratch = try ScratchDirectory()
        let store = try Self.store(scratch, StoreFixtures.randomKeyBytes())
        try await store.save(StoreFixtures.token(1), account: "alice")
        try Self.rewriteSealed(in: try scratch.storeFile("alice")) { sealed in
            sealed = Array(sealed.prefix(20))
        }

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("encrypted data is missing, damaged or truncated"))
    }

    @Test func hexBase64AndURLSafeBase64TextsGiveTheSameKey() async throws {
        let scratch = try ScratchDirectory()
        let keyBytes = StoreFixtures.randomKeyBytes()
        let base64 = Data(keyBytes).base64EncodedString()
        let urlSafe = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=", with: "")
        try await Self.store(scratch, keyBytes).save(StoreFixtures.token(1), account: "alice")

        for text in [StoreFixtures.hex(keyBytes), StoreFixtures.hex(keyBytes).uppercased(), base64, urlSafe, " \(base64)\n"] {
            let store = try FileTokenStore(directory: scratch.storePath, encryption: .aesGCM(try FileTokenStore.EncryptionKey(text: text)))
            #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
        }
    }

    @Test func keyTextThatIsNotA256BitKeyIsRejectedWithoutShowingIt() throws {
        let shortKey = String(StoreFixtures.hex(StoreFixtures.randomKeyBytes()).prefix(62))

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore.EncryptionKey(text: shortKey) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("62 characters"))
        #expect(!error.description.contains(shortKey))
    }

    @Test func aKeyOfTheWrongSizeIsRejected() throws {
        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore.EncryptionKey(bytes: [UInt8](repeating: 7, count: 16)) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("16 bytes"))
    }

    @Test func aKeyIsReadFromAPrivateKeyFileAsRawBytesOrText() async throws {
        let scratch = try ScratchDirectory()
        let keyBytes = StoreFixtures.randomKeyBytes()
        try await Self.store(scratch, keyBytes).save(StoreFixtures.token(1), account: "alice")
        let rawFile = scratch.path + "/raw.key"
        let textFile = scratch.path + "/text.key"
        try StoreFixtures.write(keyBytes, to: rawFile)
        try StoreFixtures.write(StoreFixtures.hex(keyBytes) + "\n", to: textFile, mode: 0o400)

        for file in [rawFile, textFile] {
            let key = try FileTokenStore.EncryptionKey.fromFile(atPath: file)
            let store = try FileTokenStore(directory: scratch.storePath, encryption: .aesGCM(key))
            #expect(try await store.load(account: "alice") == StoreFixtures.token(1))
        }
    }

    @Test func aKeyFileOthersCanReadIsRefused() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.path + "/exposed.key"
        try StoreFixtures.write(StoreFixtures.hex(StoreFixtures.randomKeyBytes()), to: file, mode: 0o644)

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore.EncryptionKey.fromFile(atPath: file) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("mode 0644"))
    }

    @Test func aKeyFileOwnedByAnotherUserIsRefused() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.path + "/planted.key"
        try StoreFixtures.write(StoreFixtures.hex(StoreFixtures.randomKeyBytes()), to: file)
        try #require(chown(file, 65534, 65534) == 0)

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore.EncryptionKey.fromFile(atPath: file) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("owned by uid 65534"))
    }

    @Test func aKeyFileWithoutAKeyIsRefused() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.path + "/empty.key"
        try StoreFixtures.write("not a key at all", to: file)

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore.EncryptionKey.fromFile(atPath: file) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("does not hold a 256-bit key"))
    }

    @Test func aMissingKeyFileIsAClearError() throws {
        let error = try #require(throws: OAuth2Error.self) {
            try FileTokenStore.EncryptionKey.fromFile(atPath: "/nonexistent/oauth2-store.key")
        }

        #expect(error.code == .storeError)
        #expect(error.message.contains("No such file"))
    }

    @Test func anUnsetKeyVariableIsAClearError() throws {
        let name = "OAUTH2_TEST_UNSET_KEY_\(UInt32.random(in: .min ... .max))"

        let error = try #require(throws: OAuth2Error.self) { try FileTokenStore.EncryptionKey.fromEnvironment(name) }

        #expect(error.code == .storeError)
        #expect(error.message.contains("\(name) that should hold the token store's encryption key is not set"))
    }

    /// setenv is not safe while other threads read the environment, so the
    /// variable is set in a child process.
    @Test func aKeyIsReadFromAnEnvironmentVariable() async {
        await #expect(processExitsWith: .success) {
            let keyBytes = StoreFixtures.randomKeyBytes()
            setenv("OAUTH2_TEST_STORE_KEY", Data(keyBytes).base64EncodedString(), 1)
            setenv("OAUTH2_TEST_BAD_KEY", "too-short", 1)
            let scratch = try ScratchDirectory()
            try await Self.store(scratch, keyBytes).save(StoreFixtures.token(1), account: "alice")

            let key = try FileTokenStore.EncryptionKey.fromEnvironment("OAUTH2_TEST_STORE_KEY")
            let store = try FileTokenStore(directory: scratch.storePath, encryption: .aesGCM(key))
            guard try await store.load(account: "alice") == StoreFixtures.token(1) else { exit(1) }
            do {
                _ = try FileTokenStore.EncryptionKey.fromEnvironment("OAUTH2_TEST_BAD_KEY")
                exit(2)
            } catch let error as OAuth2Error {
                guard error.message.contains("OAUTH2_TEST_BAD_KEY is not a 256-bit key"), !error.message.contains("too-short") else {
                    exit(3)
                }
            } catch {
                exit(4)
            }
        }
    }

    @Test func theKeysDescriptionIsRedacted() throws {
        let keyBytes = StoreFixtures.randomKeyBytes()
        let key = try FileTokenStore.EncryptionKey(bytes: keyBytes)

        #expect(key.description == "FileTokenStore.EncryptionKey(redacted)")
        var dumped = ""
        dump(key, to: &dumped)
        #expect(String(reflecting: key) == key.description)
        #expect(!dumped.contains(StoreFixtures.hex(keyBytes)))
        #expect(!dumped.contains("identifier"))
    }

    static func store(_ scratch: ScratchDirectory, _ keyBytes: [UInt8]) throws -> FileTokenStore {
        try FileTokenStore(directory: scratch.storePath, encryption: .aesGCM(try FileTokenStore.EncryptionKey(bytes: keyBytes)))
    }

    /// Rewrites the `sealed` field of an encrypted file through `change`, keeping the rest.
    static func rewriteSealed(in path: String, _ change: (inout [UInt8]) -> Void) throws {
        var envelope = try #require(try JSONSerialization.jsonObject(with: Data(StoreFixtures.read(path))) as? [String: Any])
        let text = try #require(envelope["sealed"] as? String)
        var sealed = try #require(Data(base64Encoded: text).map(Array.init))
        change(&sealed)
        envelope["sealed"] = Data(sealed).base64EncodedString()
        try StoreFixtures.write(Array(try JSONSerialization.data(withJSONObject: envelope)), to: path)
    }
}
