import Foundation
import OAuth2
import OAuth2Postgres
import PostgresNIO
import Testing

/// The store on a real PostgreSQL: rows, encryption, hostile rows, the schema.
@Suite(
    .enabled(
        if: TestDatabase.isConfigured, "needs PostgreSQL: `make test` starts one (scripts/postgres.sh) and sets OAUTH2_IT_POSTGRES_URL"))
struct PostgresTokenStoreTests {
    @Test func savesLoadsReplacesAndDeletes() async throws {
        try await TestDatabase.withClient { client in
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            #expect(try await store.load(account: "alice") == nil)

            let token = TestDatabase.token(1)
            try await store.save(token, account: "alice")
            var expected = token
            expected.binding = TestDatabase.binding
            #expect(try await store.load(account: "alice") == expected)

            try await store.save(TestDatabase.token(2), account: "alice")
            #expect(try await store.load(account: "alice")?.accessToken == TestDatabase.token(2).accessToken)

            try await store.delete(account: "alice")
            #expect(try await store.load(account: "alice") == nil)
            try await store.delete(account: "alice")
        }
    }

    @Test func aDatabaseDumpHoldsNoUsableToken() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            let store = try TestDatabase.store(client, table: table)
            try await store.save(TestDatabase.token(1), account: "alice")

            let rows = try await TestDatabase.execute(client, "SELECT convert_from(envelope, 'UTF8') FROM \(unescaped: "\"\(table)\"")")
            let dump = try rows.map { try $0.decode(String.self) }.joined()

            #expect(dump.contains("AES-256-GCM"))
            #expect(!dump.contains("at-1-0123456789abcdef"))
            #expect(!dump.contains("rt-1-0123456789abcdef"))
        }
    }

    /// A DPoP-bound token's key is inside the row's sealed envelope, with the
    /// token: a dump shows neither the private key nor its thumbprint, and
    /// any instance with the store's key loads it.
    @Test func aDPoPKeyIsSealedInTheRow() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            let store = try TestDatabase.store(client, table: table)
            let key = try DPoPKey.generate()
            var token = TestDatabase.token(1)
            token.tokenType = "DPoP"
            token.dpopKey = key
            try await store.save(token, account: "alice")

            let rows = try await TestDatabase.execute(client, "SELECT convert_from(envelope, 'UTF8') FROM \(unescaped: "\"\(table)\"")")
            let dump = try rows.map { try $0.decode(String.self) }.joined()
            let encodedKey = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(key)) as? [String: Any])
            #expect(dump.contains("AES-256-GCM"))
            #expect(!dump.contains(try #require(encodedKey["d"] as? String)))
            #expect(!dump.contains(key.thumbprint))

            let other = try TestDatabase.store(client, table: table)
            #expect(try await other.load(account: "alice")?.dpopKey == key)
            try await other.delete(account: "alice")
            #expect(try await store.load(account: "alice") == nil)
        }
    }

    @Test func plaintextRowsOnlyWhenAskedAndAnEncryptedStoreRefusesThem() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            let plaintext = try TestDatabase.store(client, table: table, encryption: .plaintext)
            try await plaintext.save(TestDatabase.token(1), account: "alice")
            #expect(try await plaintext.load(account: "alice")?.accessToken == TestDatabase.token(1).accessToken)

            let encrypted = try TestDatabase.store(client, table: table)
            let error = try await #require(throws: OAuth2Error.self) { try await encrypted.load(account: "alice") }
            #expect(error.code == .storeError)
            #expect(error.message.contains("not encrypted"))
        }
    }

    @Test func accountsAreToldApartByTheirExactBytes() async throws {
        try await TestDatabase.withClient { client in
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            try await store.save(TestDatabase.token(1), account: "caf\u{E9}")
            try await store.save(TestDatabase.token(2), account: "cafe\u{301}")
            #expect(try await store.load(account: "caf\u{E9}")?.accessToken == TestDatabase.token(1).accessToken)
            #expect(try await store.load(account: "cafe\u{301}")?.accessToken == TestDatabase.token(2).accessToken)
        }
    }

    @Test func anotherProvidersStoreOnTheSameTableNeverSeesTheToken() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            try await TestDatabase.store(client, table: table).save(TestDatabase.token(1), account: "alice")
            let other = try TestDatabase.store(client, table: table, binding: TestDatabase.otherBinding)
            #expect(try await other.load(account: "alice") == nil)
        }
    }

    @Test func aTokenIssuedToAnotherProviderIsNotSaved() async throws {
        try await TestDatabase.withClient { client in
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            var token = TestDatabase.token(1)
            token.binding = TestDatabase.otherBinding
            let error = try await #require(throws: OAuth2Error.self) { try await store.save(token, account: "alice") }
            #expect(error.code == .storeError)
            #expect(try await store.load(account: "alice") == nil)
        }
    }

    // MARK: hostile rows

    @Test func aTamperedCiphertextIsAStoreErrorNeverAToken() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            let store = try TestDatabase.store(client, table: table)
            try await store.save(TestDatabase.token(1), account: "alice")
            // Change one letter or digit of the base64 ciphertext, past the
            // nonce, inside the JSON envelope. Not just any character: the
            // encoder writes "/" as "\/", and turning that backslash into a
            // letter would make the base64 one character longer, which is
            // damage rather than tampering.
            try await TestDatabase.execute(
                client,
                """
                UPDATE \(unescaped: "\"\(table)\"") SET envelope = convert_to(
                    regexp_replace(
                        convert_from(envelope, 'UTF8'),
                        '("sealed":"[^"]{20}[^A-Za-z0-9"]*)[A-Za-z0-9]',
                        '\\1' || CASE WHEN substring(convert_from(envelope, 'UTF8') from '"sealed":"[^"]{20}[^A-Za-z0-9"]*([A-Za-z0-9])') = 'A' THEN 'B' ELSE 'A' END),
                    'UTF8')
                """
            )

            let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }
            #expect(error.code == .storeError)
            #expect(error.message.contains("failed decryption"))
        }
    }

    @Test func aRowMovedToAnotherAccountDoesNotDecrypt() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            let store = try TestDatabase.store(client, table: table)
            try await store.save(TestDatabase.token(1), account: "alice")
            try await TestDatabase.execute(client, "UPDATE \(unescaped: "\"\(table)\"") SET account = convert_to('mallory', 'UTF8')")

            let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "mallory") }
            #expect(error.code == .storeError)
            #expect(error.message.contains("another account"))
            #expect(try await store.load(account: "alice") == nil)
        }
    }

    @Test func aRowMovedToAnotherProviderIsRefused() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            try await TestDatabase.store(client, table: table).save(TestDatabase.token(1), account: "alice")
            try await TestDatabase.execute(
                client,
                "UPDATE \(unescaped: "\"\(table)\"") SET token_endpoint = \(TestDatabase.otherBinding.tokenEndpoint)"
            )

            let other = try TestDatabase.store(client, table: table, binding: TestDatabase.otherBinding)
            let error = try await #require(throws: OAuth2Error.self) { try await other.load(account: "alice") }
            #expect(error.code == .storeError)
            #expect(error.message.contains("another provider"))
        }
    }

    @Test func aTableOfANewerSchemaVersionIsRefused() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            try await TestDatabase.store(client, table: table).save(TestDatabase.token(1), account: "alice")
            try await TestDatabase.execute(client, "UPDATE \(unescaped: "\"\(table)_schema\"") SET version = 99")

            let fresh = try TestDatabase.store(client, table: table)
            let error = try await #require(throws: OAuth2Error.self) { try await fresh.load(account: "alice") }
            #expect(error.code == .storeError)
            #expect(error.message.contains("schema version 99"))
            #expect(error.message.contains("newer"))
        }
    }

    @Test func instancesStartingTogetherCreateTheTableOnce() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<8 {
                    group.addTask {
                        try await TestDatabase.store(client, table: table).save(TestDatabase.token(n), account: "user-\(n)")
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await TestDatabase.execute(client, "SELECT count(*) FROM \(unescaped: "\"\(table)\"")")
            #expect(try rows.first?.decode(Int.self) == 8)
            let versions = try await TestDatabase.execute(client, "SELECT version FROM \(unescaped: "\"\(table)_schema\"")")
            #expect(try versions.map { try $0.decode(Int.self) } == [PostgresTokenStore.schemaVersion])
        }
    }

    // MARK: another role's table

    @Test func aTableAnotherRoleMadeFirstIsRefusedAndReceivesNoRow() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            let role = "mallory_" + table
            try await TestDatabase.withRole(role, client) {
                // Mallory makes the table first, as the store would, and lets everyone write to it.
                try await TestDatabase.asRole(role, client) { connection in
                    try await connection.query(
                        "CREATE TABLE \(unescaped: table) \(unescaped: TestDatabase.tokenTableColumns)", logger: TestDatabase.logger)
                    try await connection.query("GRANT ALL ON \(unescaped: "\"\(table)\"") TO PUBLIC", logger: TestDatabase.logger)
                }
                let store = try TestDatabase.store(client, table: table, encryption: .plaintext)
                let error = try await #require(throws: OAuth2Error.self) { try await store.save(TestDatabase.token(1), account: "alice") }
                #expect(error.code == .storeError)
                #expect(error.message.contains(table))
                #expect(error.message.contains(role))
                #expect(!error.message.contains("at-1-0123456789abcdef"))
                let rows = try await TestDatabase.execute(client, "SELECT count(*) FROM \(unescaped: "\"\(table)\"")")
                #expect(try rows.first?.decode(Int.self) == 0)
            }
        }
    }

    @Test func aTableMadeLaterEarlierOnTheSearchPathIsNeverUsed() async throws {
        let table = TestDatabase.uniqueTable()
        let schema = "s_" + table
        let role = "mallory_" + table
        var configuration = try TestDatabase.configuration()
        // A schema that does not exist yet comes first on this client's path.
        configuration.options.additionalStartupParameters = [("search_path", "\(schema), public")]
        let client = PostgresClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await TestDatabase.withRole(role, client) {
                let store = try TestDatabase.store(client, table: table, encryption: .plaintext)
                try await store.save(TestDatabase.token(1), account: "alice")

                try await TestDatabase.execute(client, "CREATE SCHEMA \(unescaped: schema) AUTHORIZATION \(unescaped: role)")
                try await TestDatabase.asRole(role, client) { connection in
                    try await connection.query(
                        "CREATE TABLE \(unescaped: schema).\(unescaped: table) \(unescaped: TestDatabase.tokenTableColumns)",
                        logger: TestDatabase.logger)
                    try await connection.query("GRANT USAGE ON SCHEMA \(unescaped: schema) TO PUBLIC", logger: TestDatabase.logger)
                    try await connection.query(
                        "GRANT ALL ON \(unescaped: schema).\(unescaped: table) TO PUBLIC", logger: TestDatabase.logger)
                }
                try await store.save(TestDatabase.token(2), account: "alice")
                #expect(try await store.load(account: "alice")?.accessToken == TestDatabase.token(2).accessToken)
                let rows = try await TestDatabase.execute(client, "SELECT count(*) FROM \(unescaped: schema).\(unescaped: table)")
                #expect(try rows.first?.decode(Int.self) == 0)
                // A store starting now finds Mallory's table first, and refuses it.
                let error = try await #require(throws: OAuth2Error.self) {
                    try await TestDatabase.store(client, table: table).load(account: "alice")
                }
                #expect(error.code == .storeError)
                #expect(error.message.contains(role))
            }
        }
    }

    // MARK: logs

    @Test func noTokenReachesALogAtTraceLevelThroughSaveLoadLockAndDelete() async throws {
        let logs = RecordedLogs()
        try await TestDatabase.withClient { client in
            let store = try PostgresTokenStore(
                client: client, binding: TestDatabase.binding, table: TestDatabase.uniqueTable(), encryption: .plaintext,
                connectionTimeout: TestDatabase.connectionTimeout, logger: logs.logger()
            )
            try await store.save(TestDatabase.token(1), account: "alice")
            #expect(try await store.load(account: "alice") != nil)
            try await store.withLock(account: "alice", timeout: .seconds(10)) { () async throws(OAuth2Error) in
                #expect(try await store.load(account: "alice") != nil)
                try await store.save(TestDatabase.token(2), account: "alice")
            }
            try await store.delete(account: "alice")
        }
        // postgres-nio logged through the store's logger: the capture works.
        #expect(!logs.all.isEmpty)
        for n in 1...2 {
            for secret in [TestDatabase.token(n).accessToken.value, TestDatabase.token(n).refreshToken?.value ?? ""] {
                let forms = [
                    secret, Data(secret.utf8).base64EncodedString(), Data(secret.utf8).map { String(format: "%02x", $0) }.joined(),
                    Data(secret.utf8).map { String(format: "%02x", $0) }.joined(separator: " "),
                ]
                for form in forms {
                    #expect(logs.all.allSatisfy { !$0.contains(form) }, "a log line holds a token (as \(form.prefix(12))…)")
                }
            }
        }
    }

    @Test(arguments: ["", "Tokens", "1tokens", "tokens; DROP TABLE x", "a\"b", String(repeating: "t", count: 49)])
    func aTableNameThatWouldNeedQuotingIsRefused(name: String) async throws {
        try await TestDatabase.withClient { client in
            let error = try #require(throws: OAuth2Error.self) { try TestDatabase.store(client, table: name) }
            #expect(error.code == .invalidConfiguration)
        }
    }

    // MARK: TLS

    @Test func sslmodeVerifyFullConnectsOverTLSCheckingTheServersCertificate() async throws {
        let caFile = try #require(ProcessInfo.processInfo.environment["OAUTH2_IT_POSTGRES_CA_FILE"])
        let configuration = try PostgresTokenStore.clientConfiguration(
            url: TestDatabase.url + "?sslmode=verify-full&sslrootcert=" + caFile, password: try TestDatabase.password()
        )
        let client = PostgresClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            try await store.save(TestDatabase.token(1), account: "alice")
            #expect(try await store.load(account: "alice")?.accessToken == TestDatabase.token(1).accessToken)
            // The server says this session is encrypted.
            let rows = try await TestDatabase.execute(client, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            #expect(try rows.first?.decode(Bool.self) == true)
        }
    }

    @Test func sslmodeRequireRefusesAServerCertificateNoTrustedRootSigned() async throws {
        var configuration = try PostgresTokenStore.clientConfiguration(
            url: TestDatabase.url + "?sslmode=require", password: try TestDatabase.password())
        configuration.options.connectTimeout = .seconds(5)
        let client = PostgresClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = try PostgresTokenStore(
                client: client, binding: TestDatabase.binding, table: TestDatabase.uniqueTable(),
                encryption: .aesGCM(TestDatabase.key), connectionTimeout: .seconds(3)
            )
            let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }
            #expect(error.code == .storeError)
        }
    }

    // MARK: failures

    @Test func aWrongPasswordIsAStoreErrorThatNamesNoPassword() async throws {
        var configuration = try TestDatabase.configuration()
        configuration.password = "wrong-password-1234"
        let client = PostgresClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            let error = try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }
            #expect(error.code == .storeError)
            #expect(!error.message.contains("wrong-password-1234"))
            #expect(!String(reflecting: error).contains("wrong-password-1234"))
        }
    }
}
