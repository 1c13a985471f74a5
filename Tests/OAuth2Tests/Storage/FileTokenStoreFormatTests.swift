import Foundation
import Testing
@testable import OAuth2

/// The file format: version 2 carries the token's provider binding in the
/// clear and authenticates it when encrypted; version 1 files still load.
@Suite struct FileTokenStoreFormatTests {
    static let binding = TokenBinding(tokenEndpoint: "https://issuer.example/oauth/token", clientID: "app-1")

    /// Plaintext or encrypted, for tests that hold for both.
    enum Form: String, CaseIterable, Sendable {
        case plaintext, encrypted

        func store(_ scratch: ScratchDirectory, keyBytes: [UInt8]) throws -> FileTokenStore {
            switch self {
            case .plaintext: try FileTokenStore(directory: scratch.storePath)
            case .encrypted: try FileTokenStoreEncryptionTests.store(scratch, keyBytes)
            }
        }
    }

    @Test(arguments: Form.allCases, [true, false])
    func aSaveWritesVersion2WithTheBindingInTheHeaderAndLoadsItBack(form: Form, bound: Bool) async throws {
        let scratch = try ScratchDirectory()
        let store = try form.store(scratch, keyBytes: StoreFixtures.randomKeyBytes())
        let token = bound ? Self.boundToken(1) : StoreFixtures.token(1)

        try await store.save(token, account: "alice")

        let envelope = try Self.envelope(of: scratch.storeFile("alice"))
        #expect(envelope["version"] as? Int == 2)
        #expect(Self.headerBinding(envelope) == token.binding)
        #expect(envelope.keys.contains("binding") == bound)
        #expect(try await store.load(account: "alice") == token)
    }

    /// Made outside swift-oauth2 (Python's `cryptography`) to the version 1
    /// recipe: key bytes 0...31, nonce twelve 0x01 bytes, authenticated data
    /// `"swift-oauth2-token/1\nalice"`, plaintext
    /// `{"accessToken":"v1-access","expiresAt":1700000000,"extraFields":{},"refreshToken":"v1-refresh","scopes":["a"],"tokenType":"Bearer"}`.
    @Test func anEncryptedVersion1FileLoadsWithoutABinding() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStoreEncryptionTests.store(scratch, Array(0...31))
        try StoreFixtures.write(
            #"""
            {"encryption":"AES-256-GCM","format":"swift-oauth2-token","keyID":"2b9e3e9a37c5343b",
            "sealed":"AQEBAQEBAQEBAQEBDOGEVgvgGxWAOwx9dkVo+r1forry4HOvgPkrzvhxjljesxEOkrRgAm8Sx+8Clb5Au8lqaDaL83i7H0FSo1Gp5XESbJr3QK8fgE4oAkeAQNjem6LmVuIvQIsyvsqRAHy/4qlQ4MvRs5Kg2pXiECAXZ1k77peAKx8XwEbCkBV0QTHwzuEGERVcbF7iPKGQsAQt61bs",
            "version":1}
            """#, to: try scratch.storeFile("alice"))

        let token = try await store.load(account: "alice")

        #expect(
            token
                == AccessToken(
                    accessToken: Secret("v1-access"), expiresAt: Date(timeIntervalSince1970: 1_700_000_000),
                    refreshToken: Secret("v1-refresh"), scopes: ["a"]
                ))
        #expect(token?.binding == nil)
    }

    /// Made outside swift-oauth2 to the documented version 2 recipe, so the
    /// authenticated data cannot drift: key bytes 0...31, nonce twelve 0x02
    /// bytes, authenticated data the length-prefixed fields
    /// `swift-oauth2-token/2`, `alice`, `https://issuer.example/token`, `app`.
    @Test func anEncryptedVersion2FileMadeToTheDocumentedRecipeLoads() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStoreEncryptionTests.store(scratch, Array(0...31))
        try StoreFixtures.write(
            #"""
            {"binding":{"clientID":"app","tokenEndpoint":"https://issuer.example/token"},
            "encryption":"AES-256-GCM","format":"swift-oauth2-token","keyID":"2b9e3e9a37c5343b",
            "sealed":"AgICAgICAgICAgIC4Ap42Nq8Qiif6smdXVvgMWrbgg33Nx2CMXz9IRUCJ6a5lr9AJU3Ru7UD59+esQq6SPtt7TaL9EZ4vSHXc1wAMKysOgNLCGWzgsl5tz8EJcmUxfzCx7eQgk/czN/P7AfdLvRpvwpFWSPH0yHmjhwgo3lY+7MlGm/cqYjQETfSIMQbcg69qNN01DkXwNI7MZyDcXI/U1oLpSzn/aS6KmpDsDAoPd9ZBOcIWjNoxRCQWS5jg6rWVFjQG6uezo3W/mpCM0sN4Wiwz1RYBlIMyNP70HWhRuFk/dOvNd4ofz52Gw==",
            "version":2}
            """#, to: try scratch.storeFile("alice"))

        let token = try await store.load(account: "alice")

        #expect(
            token
                == AccessToken(
                    accessToken: Secret("v2-access"), expiresAt: Date(timeIntervalSince1970: 1_700_000_000),
                    refreshToken: Secret("v2-refresh"), scopes: ["a"],
                    binding: TokenBinding(tokenEndpoint: "https://issuer.example/token", clientID: "app")
                ))
    }

    /// What the client does with a version 1 token: stamp it and save it again.
    @Test(arguments: Form.allCases)
    func aVersion1FileSavedAgainBecomesVersion2(form: Form) async throws {
        let scratch = try ScratchDirectory()
        let store = try form.store(scratch, keyBytes: Array(0...31))
        try StoreFixtures.write(
            #"{"format":"swift-oauth2-token","version":1,"token":{"accessToken":"abc","tokenType":"Bearer","scopes":[],"extraFields":{}}}"#,
            to: try scratch.storeFile("alice")
        )
        let migrating = try FileTokenStore(
            directory: scratch.storePath,
            encryption: form == .plaintext
                ? .plaintext : .aesGCM(try FileTokenStore.EncryptionKey(bytes: Array(0...31)), acceptingPlaintextFiles: true)
        )
        var token = try #require(try await migrating.load(account: "alice"))
        #expect(token.binding == nil)

        token.binding = Self.binding
        try await migrating.save(token, account: "alice")

        let envelope = try Self.envelope(of: scratch.storeFile("alice"))
        #expect(envelope["version"] as? Int == 2)
        #expect(Self.headerBinding(envelope) == Self.binding)
        #expect(try await store.load(account: "alice") == token)
    }

    /// Each alteration an attacker without the key could make to the clear-text header.
    @Test(arguments: [
        "another client id", "another token endpoint", "binding removed", "binding added",
    ])
    func anEncryptedFileWhoseHeaderBindingWasAlteredDoesNotDecrypt(alteration: String) async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStoreEncryptionTests.store(scratch, StoreFixtures.randomKeyBytes())
        try await store.save(alteration == "binding added" ? StoreFixtures.token(1) : Self.boundToken(1), account: "alice")
        try Self.rewriteEnvelope(of: scratch.storeFile("alice")) { envelope in
            Self.alter(&envelope, alteration)
        }

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"alice\""))
        #expect(error.message.contains("failed decryption"), "\(error.message)")
        #expect(error.message.contains("provider binding"))
        Self.expectNoSecret(in: error)
    }

    /// A downgrade would drop the binding from the authenticated data; it must not open.
    @Test func anEncryptedVersion2FileRelabelledVersion1DoesNotDecrypt() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStoreEncryptionTests.store(scratch, StoreFixtures.randomKeyBytes())
        try await store.save(Self.boundToken(1), account: "alice")
        try Self.rewriteEnvelope(of: scratch.storeFile("alice")) { envelope in
            envelope["version"] = 1
            envelope["binding"] = nil
        }

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("failed decryption"))
    }

    @Test(arguments: [
        "another client id", "another token endpoint", "binding removed", "binding added", "token's binding changed",
    ])
    func aPlaintextFileWhoseHeaderBindingDisagreesWithItsTokenIsCorrupt(alteration: String) async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        try await store.save(alteration == "binding added" ? StoreFixtures.token(1) : Self.boundToken(1), account: "alice")
        try Self.rewriteEnvelope(of: scratch.storeFile("alice")) { envelope in
            Self.alter(&envelope, alteration)
        }

        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"alice\""))
        #expect(error.message.contains("is corrupt: the provider binding in its header does not match the token's own"), "\(error.message)")
        Self.expectNoSecret(in: error)
    }

    /// A token obtained for one resource keeps it through the file, and an
    /// encrypted file authenticates it: a file relabelled for another resource does not open.
    @Test func anEncryptedFileKeepsTheTokensResourceAndDoesNotOpenWhenItIsRemoved() async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStoreEncryptionTests.store(scratch, StoreFixtures.randomKeyBytes())
        var token = StoreFixtures.token(1)
        token.binding = TokenBinding(
            tokenEndpoint: Self.binding.tokenEndpoint, clientID: Self.binding.clientID, resource: "https://mcp.example/a")
        try await store.save(token, account: "alice")
        #expect(try await store.load(account: "alice")?.binding?.resource == "https://mcp.example/a")

        try Self.rewriteEnvelope(of: scratch.storeFile("alice")) { envelope in
            envelope["binding"] = ["tokenEndpoint": Self.binding.tokenEndpoint, "clientID": Self.binding.clientID]
        }
        let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }
        #expect(error.code == .storeError)
        #expect(error.message.contains("failed decryption"))
    }

    /// Tokens stored before bindings recorded a resource decode with none,
    /// and a binding without one encodes as before (no `resource` key).
    @Test func aBindingWithoutAResourceIsTheSameBytesAsBefore() throws {
        let old = #"{"clientID":"app-1","tokenEndpoint":"https://issuer.example/oauth/token"}"#
        let decoded = try JSONDecoder().decode(TokenBinding.self, from: Data(old.utf8))
        #expect(decoded == Self.binding)
        #expect(decoded.resource == nil)
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(Self.binding)) as? [String: Any]
        #expect(object?.keys.sorted() == ["clientID", "tokenEndpoint"])
    }

    // MARK: - Support

    static func boundToken(_ index: Int) -> AccessToken {
        var token = StoreFixtures.token(index)
        token.binding = binding
        return token
    }

    static func envelope(of path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(StoreFixtures.read(path))) as? [String: Any])
    }

    static func headerBinding(_ envelope: [String: Any]) -> TokenBinding? {
        guard let object = envelope["binding"] as? [String: Any],
            let endpoint = object["tokenEndpoint"] as? String, let clientID = object["clientID"] as? String
        else { return nil }
        return TokenBinding(tokenEndpoint: endpoint, clientID: clientID)
    }

    static func rewriteEnvelope(of path: String, _ change: (inout [String: Any]) -> Void) throws {
        var envelope = try envelope(of: path)
        change(&envelope)
        try StoreFixtures.write(Array(try JSONSerialization.data(withJSONObject: envelope)), to: path)
    }

    static func alter(_ envelope: inout [String: Any], _ alteration: String) {
        switch alteration {
        case "another client id":
            envelope["binding"] = ["tokenEndpoint": binding.tokenEndpoint, "clientID": "app-2"]
        case "another token endpoint":
            envelope["binding"] = ["tokenEndpoint": "https://evil.example/token", "clientID": binding.clientID]
        case "binding removed":
            envelope["binding"] = nil
        case "binding added":
            envelope["binding"] = ["tokenEndpoint": binding.tokenEndpoint, "clientID": binding.clientID]
        case "token's binding changed":
            var token = envelope["token"] as? [String: Any] ?? [:]
            token["binding"] = ["tokenEndpoint": "https://evil.example/token", "clientID": binding.clientID]
            envelope["token"] = token
        default:
            Issue.record("unknown alteration \(alteration)")
        }
    }

    static func expectNoSecret(in error: OAuth2Error) {
        for secret in [StoreFixtures.accessTokenValue, StoreFixtures.refreshTokenValue, StoreFixtures.idTokenValue] {
            #expect(!error.description.contains(secret))
        }
    }
}
