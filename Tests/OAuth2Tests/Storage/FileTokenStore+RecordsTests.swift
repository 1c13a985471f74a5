import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// ``ClientRecordStore`` on ``FileTokenStore``: records sealed like tokens.
@Suite struct FileTokenStoreRecordsTests {
    static let secret = "zq7-client-secret-SECRET-0123456789"
    static let registration = ClientRegistration(
        issuer: "https://id.example", clientID: "abc123", clientSecret: .opaque(secret),
        registrationAccessToken: Secret("rat-SECRET-0123456789abcdef"),
        registrationClientURI: URL(string: "https://id.example/register/abc123/"),
        metadata: ClientMetadata(redirectURIs: [URL(string: "http://127.0.0.1/cb")!], clientName: "App"))

    static func encrypted(_ scratch: ScratchDirectory, _ keyBytes: [UInt8] = StoreFixtures.randomKeyBytes()) throws -> FileTokenStore {
        try FileTokenStore(directory: scratch.storePath, encryption: .aesGCM(try FileTokenStore.EncryptionKey(bytes: keyBytes)))
    }

    static func recordFile(_ scratch: ScratchDirectory, _ key: ClientRecordKey) throws -> String {
        try scratch.storePath + "/" + TokenFileName.fileName(for: key)
    }

    @Test(arguments: [false, true])
    func aRegistrationRoundTripsAndItsSecretStaysOpaque(encrypt: Bool) async throws {
        let scratch = try ScratchDirectory()
        let store = encrypt ? try Self.encrypted(scratch) : try FileTokenStore(directory: scratch.storePath)
        #expect(try await store.loadRegistration(issuer: "https://id.example") == nil)
        try await store.saveRegistration(Self.registration)
        let loaded = try #require(try await store.loadRegistration(issuer: "https://id.example"))
        #expect(loaded == Self.registration)
        #expect(!String(describing: loaded).contains("zq7"), "a stored client secret shows no prefix")
        let contents = String(
            decoding: try StoreFixtures.read(try Self.recordFile(scratch, .registration(issuer: "https://id.example"))), as: UTF8.self)
        #expect(contents.contains("swift-oauth2-record"))
        if encrypt {
            #expect(!contents.contains(Self.secret))
            #expect(!contents.contains("abc123"))
        }
        try await store.deleteRegistration(issuer: "https://id.example")
        #expect(try await store.loadRegistration(issuer: "https://id.example") == nil)
        try await store.deleteRegistration(issuer: "https://id.example")
    }

    @Test func recordFilesAre0600WhateverTheUmaskAndDoNotCollideWithTokens() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let old = umask(0o022)
        defer { umask(old) }
        // An account named like a record's file name still gets a .token file of its own.
        let key = ClientRecordKey(kind: "registration", name: "x")
        try await store.saveRecord(Data("record".utf8), for: key)
        try await store.save(StoreFixtures.token(1), account: "registration.x")
        #expect(StoreFixtures.mode(of: try Self.recordFile(scratch, key)) == 0o600)
        #expect(try scratch.storeEntries().filter { !$0.hasSuffix(".lock") } == ["registration%2Ex.token", "registration.x.record"])
        #expect(try await store.loadRecord(key) == Data("record".utf8))
        #expect(try await store.load(account: "registration.x") == StoreFixtures.token(1))
    }

    @Test func aLongNameIsHashedAndStillRoundTrips() async throws {
        let scratch = try ScratchDirectory()
        let store = try Self.encrypted(scratch)
        let key = ClientRecordKey(kind: "resource", name: "https://mcp.example/" + String(repeating: "deep/", count: 80))
        try await store.saveRecord(Data("x".utf8), for: key)
        #expect(try TokenFileName.fileName(for: key).hasPrefix("+sha256-"))
        #expect(try await store.loadRecord(key) == Data("x".utf8))
    }

    @Test(arguments: [false, true])
    func swappedRecordFilesAreAStoreError(encrypt: Bool) async throws {
        let scratch = try ScratchDirectory()
        let store = encrypt ? try Self.encrypted(scratch) : try FileTokenStore(directory: scratch.storePath)
        let good = ClientRecordKey.registration(issuer: "https://id.example")
        let evil = ClientRecordKey.registration(issuer: "https://evil.example")
        try await store.saveRecord(Data("good".utf8), for: good)
        try await store.saveRecord(Data("evil".utf8), for: evil)
        _ = rename(try Self.recordFile(scratch, evil), try Self.recordFile(scratch, good))
        let error = await #expect(throws: OAuth2Error.self) { _ = try await store.loadRecord(good) }
        #expect(error?.code == .storeError)
    }

    @Test func anAlteredSealedRecordIsAStoreError() async throws {
        let scratch = try ScratchDirectory()
        let store = try Self.encrypted(scratch)
        let key = ClientRecordKey.registration(issuer: "https://id.example")
        try await store.saveRecord(Data("good".utf8), for: key)
        try FileTokenStoreEncryptionTests.rewriteSealed(in: try Self.recordFile(scratch, key)) { $0[$0.count - 1] ^= 1 }
        let error = await #expect(throws: OAuth2Error.self) { _ = try await store.loadRecord(key) }
        #expect(error?.code == .storeError)
    }

    @Test func aPlaintextRecordInAnEncryptedStoreIsAStoreError() async throws {
        let scratch = try ScratchDirectory()
        let key = ClientRecordKey.registration(issuer: "https://id.example")
        try await FileTokenStore(directory: scratch.storePath).saveRecord(Data("planted".utf8), for: key)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await Self.encrypted(scratch).loadRecord(key) }
        #expect(error?.code == .storeError)
    }

    @Test func anUnreadableOrOpenRecordFileIsAStoreErrorNeverNil() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let key = ClientRecordKey.registration(issuer: "https://id.example")
        try await store.saveRecord(Data("x".utf8), for: key)
        let path = try Self.recordFile(scratch, key)
        chmod(path, 0o644)
        await #expect(throws: OAuth2Error.self) { _ = try await store.loadRecord(key) }
        chmod(path, 0o600)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await store.loadRecord(key) }
        #expect(error?.code == .storeError)
        // A record that is there but does not decode as a registration is a store error too.
        try await store.saveRecord(Data("[]".utf8), for: key)
        let typed = await #expect(throws: OAuth2Error.self) { _ = try await store.loadRegistration(issuer: "https://id.example") }
        #expect(typed?.code == .storeError)
    }

    @Test func anEmptyKindOrNameIsAStoreError() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        await #expect(throws: OAuth2Error.self) { try await store.saveRecord(Data(), for: ClientRecordKey(kind: "registration", name: "")) }
        await #expect(throws: OAuth2Error.self) { _ = try await InMemoryTokenStore().loadRecord(ClientRecordKey(kind: "", name: "x")) }
    }

    @Test func temporaryRecordFilesAreCleanedUpLikeTokenOnes() throws {
        #expect(TokenFileName.isTemporary(TokenFileName.temporaryName(for: "registration.x.record")))
    }
}
