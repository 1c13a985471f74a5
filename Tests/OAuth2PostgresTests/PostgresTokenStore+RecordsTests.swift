import Foundation
import OAuth2
import OAuth2Postgres
import PostgresNIO
import Testing

/// Client records on a real PostgreSQL: a table of their own, sealed rows.
@Suite(
    .enabled(
        if: TestDatabase.isConfigured, "needs PostgreSQL: `make test` starts one (scripts/postgres.sh) and sets OAUTH2_IT_POSTGRES_URL"))
struct PostgresTokenStoreRecordsTests {
    static let secret = "zq7-client-secret-SECRET-0123456789"
    static let registration = ClientRegistration(
        issuer: "https://id.example", clientID: "abc123", clientSecret: .opaque(secret),
        registrationAccessToken: Secret("rat-SECRET-0123456789abcdef"),
        registrationClientURI: URL(string: "https://id.example/register/abc123/"),
        metadata: ClientMetadata(redirectURIs: [URL(string: "http://127.0.0.1/cb")!]))

    @Test func aRegistrationRoundTripsSealedAndIsSharedAcrossBindings() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            let store = try TestDatabase.store(client, table: table)
            #expect(try await store.loadRegistration(issuer: "https://id.example") == nil)
            try await store.saveRegistration(Self.registration)
            let loaded = try #require(try await store.loadRegistration(issuer: "https://id.example"))
            #expect(loaded == Self.registration)
            #expect(!String(describing: loaded).contains("zq7"))

            let rows = try await TestDatabase.execute(
                client, "SELECT convert_from(envelope, 'UTF8') FROM \(unescaped: "\"\(table)_records\"")")
            let dump = try rows.map { try $0.decode(String.self) }.joined()
            #expect(dump.contains("AES-256-GCM"))
            #expect(!dump.contains(Self.secret))
            #expect(!dump.contains("abc123"))

            // A registration is the server's, not one configuration's: another binding reads it.
            let other = try TestDatabase.store(
                client, table: table, binding: TokenBinding(tokenEndpoint: "https://other.example/token", clientID: "other"))
            #expect(try await other.loadRegistration(issuer: "https://id.example") == Self.registration)

            try await store.deleteRegistration(issuer: "https://id.example")
            #expect(try await store.loadRegistration(issuer: "https://id.example") == nil)
            try await store.deleteRegistration(issuer: "https://id.example")
        }
    }

    @Test func aRowMovedToAnotherKeyIsAStoreError() async throws {
        try await TestDatabase.withClient { client in
            let table = TestDatabase.uniqueTable()
            for encryption in [PostgresTokenStore.Encryption.aesGCM(TestDatabase.key), .plaintext] {
                let store = try TestDatabase.store(client, table: table, encryption: encryption)
                let good = ClientRecordKey.registration(issuer: "https://id.example")
                let evil = ClientRecordKey.registration(issuer: "https://evil.example")
                try await store.saveRecord(Data("evil".utf8), for: evil)
                try await store.deleteRecord(good)
                _ = try await TestDatabase.execute(
                    client, "UPDATE \(unescaped: "\"\(table)_records\"") SET name = \(good.name) WHERE name = \(evil.name)")
                let error = await #expect(throws: OAuth2Error.self) { _ = try await store.loadRecord(good) }
                #expect(error?.code == .storeError)
                try await store.deleteRecord(good)
            }
        }
    }
}
