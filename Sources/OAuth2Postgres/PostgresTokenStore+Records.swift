#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import OAuth2
import PostgresNIO
import Synchronization

/// Records (registrations, discovered resources) in a table of their own,
/// `<table>_records`, one row per record key, holding the envelope a
/// ``/OAuth2/FileTokenStore`` record file holds: sealed with the store's key, the
/// record's kind and name as authenticated data, so a row whose key columns
/// were changed does not decrypt (or, plaintext, is refused).
///
/// Records are not scoped to the store's ``PostgresTokenStore/binding``: a registration is what
/// a client id comes from, so it is kept for the authorization server, by
/// its issuer, whatever configuration reads it. The table is made on first
/// use, with the token table's owner rule (a table of that name another
/// role owns is refused); the token table's schema version is not touched,
/// so instances of an older version keep using the same token table.
extension PostgresTokenStore: ClientRecordStore {
    /// The records table's name.
    public var recordTable: String { table + "_records" }

    /// The record under `key`, or `nil`.
    ///
    /// - Throws: `store_error` when the row is there but cannot be trusted or read.
    public func loadRecord(_ key: ClientRecordKey) async throws(OAuth2Error) -> Data? {
        try Self.requireRecordKey(key)
        let name = try await prepareRecordTable()
        let envelope = try await run("read the \(key)", account: key.kind) { connection in
            try await self.values(
                "SELECT envelope FROM \(unescaped: name) WHERE kind = \(key.kind) AND name = \(key.name)", as: Data.self, on: connection
            ).first
        }
        guard let envelope else { return nil }
        return try RecordFileFormat.decode(
            Array(envelope), key: key, encryption: encryption, subject: "the row of the \(key) in table \(recordTable)")
    }

    /// Stores `record` under `key` (an upsert: atomic).
    public func saveRecord(_ record: Data, for key: ClientRecordKey) async throws(OAuth2Error) {
        try Self.requireRecordKey(key)
        let name = try await prepareRecordTable()
        let envelope = Data(try RecordFileFormat.encode(record, key: key, encryption: encryption))
        try await run("save the \(key)", account: key.kind) { connection in
            try await self.execute(
                """
                INSERT INTO \(unescaped: name) (kind, name, envelope, updated_at) VALUES (\(key.kind), \(key.name), \(envelope), now())
                ON CONFLICT (kind, name) DO UPDATE SET envelope = EXCLUDED.envelope, updated_at = EXCLUDED.updated_at
                """,
                on: connection
            )
        }
    }

    /// Deletes the record under `key`; deleting one that is not there succeeds.
    public func deleteRecord(_ key: ClientRecordKey) async throws(OAuth2Error) {
        try Self.requireRecordKey(key)
        let name = try await prepareRecordTable()
        try await run("delete the \(key)", account: key.kind) { connection in
            try await self.execute("DELETE FROM \(unescaped: name) WHERE kind = \(key.kind) AND name = \(key.name)", on: connection)
        }
    }

    private static func requireRecordKey(_ key: ClientRecordKey) throws(OAuth2Error) {
        guard !key.kind.isEmpty, !key.name.isEmpty else {
            throw OAuth2Error.store("a record's kind and name must not be empty")
        }
    }

    /// Makes the records table on first use, once per store value (again
    /// after a failure), in a transaction under an advisory lock of its own.
    private func prepareRecordTable() async throws(OAuth2Error) -> String {
        if let name = preparedRecordTable.withLock({ $0 }) { return name }
        let quoted = Self.quote(recordTable)
        let setupKey = Self.key(of: ["swift-oauth2 records", recordTable])
        let name: String
        do {
            name = try await withLeasedConnection(timeout: connectionTimeout) { connection in
                try await self.execute("BEGIN", on: connection)
                do {
                    try await self.execute("SELECT pg_advisory_xact_lock(\(setupKey))", on: connection)
                    // Another role's table is refused before anything is read from or written to it.
                    var schema = try await self.ownSchema(of: quoted, on: connection)
                    if schema == nil {
                        try await self.execute(
                            """
                            CREATE TABLE IF NOT EXISTS \(unescaped: quoted) (
                                kind text NOT NULL,
                                name text NOT NULL,
                                envelope bytea NOT NULL,
                                updated_at timestamptz NOT NULL DEFAULT now(),
                                PRIMARY KEY (kind, name)
                            )
                            """,
                            on: connection
                        )
                        schema = try await self.ownSchema(of: quoted, on: connection)
                    }
                    try await self.execute("COMMIT", on: connection)
                    guard let schema else {
                        throw OAuth2Error.store("the records table \(self.recordTable) is missing after it was made")
                    }
                    return Self.quote(schema) + "." + quoted
                } catch {
                    try? await self.execute("ROLLBACK", on: connection)
                    throw error
                }
            }
        } catch {
            throw storeError(error, doing: "prepare the records table \(recordTable)")
        }
        preparedRecordTable.withLock { $0 = name }
        return name
    }
}
