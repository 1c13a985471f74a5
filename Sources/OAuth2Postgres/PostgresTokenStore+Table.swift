import OAuth2
import PostgresNIO

/// The token table: its name, made on first use, its owner and schema
/// version checked before any token is read or written.
extension PostgresTokenStore {
    /// The tables' names, each qualified with its schema and quoted as SQL identifiers.
    struct PreparedNames: Sendable {
        var table: String
        var schemaTable: String
    }

    /// The table's name for a statement: qualified once ``prepareTable()`` found it.
    var quotedTable: String { prepared?.table ?? Self.quote(table) }

    /// `name` as an SQL identifier (``isTableName(_:)`` allows nothing that needs
    /// escaping; a schema's name may need it).
    static func quote(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    static func isTableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 48 else { return false }
        let isLetter = { (byte: UInt8) in (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_") }
        return isLetter(first) && name.utf8.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// Makes the table on first use, or checks its schema version, once per
    /// store value (again after a failure).
    ///
    /// In one transaction under a transaction-scoped advisory lock of its
    /// own, so instances starting together do not race to create it.
    func prepareTable() async throws(OAuth2Error) {
        if prepared != nil { return }
        let setupKey = Self.key(of: ["swift-oauth2 schema", table])
        let names: PreparedNames
        do {
            names = try await withLeasedConnection(timeout: connectionTimeout) { connection in
                try await self.execute("BEGIN", on: connection)
                do {
                    let names = try await self.prepareTable(on: connection, setupKey: setupKey)
                    try await self.execute("COMMIT", on: connection)
                    return names
                } catch {
                    try? await self.execute("ROLLBACK", on: connection)
                    throw error
                }
            }
        } catch {
            throw storeError(error, doing: "prepare the token table \(table)")
        }
        prepared = names
    }

    private func prepareTable(on connection: PostgresConnection, setupKey: Int64) async throws -> PreparedNames {
        try await execute("SELECT pg_advisory_xact_lock(\(setupKey))", on: connection)
        let tableName = Self.quote(table)
        let schemaTableName = Self.quote(table + "_schema")
        // Before anything reads or writes them: another role's table is refused.
        var tableSchema = try await ownSchema(of: tableName, on: connection)
        var schemaTableSchema = try await ownSchema(of: schemaTableName, on: connection)
        let version =
            schemaTableSchema != nil
            ? try await values(
                "SELECT version FROM \(unescaped: Self.quote(schemaTableSchema ?? "") + "." + schemaTableName)", as: Int.self,
                on: connection
            ).max() : nil
        switch version {
        case nil:
            try await execute(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: tableName) (
                    token_endpoint text NOT NULL,
                    client_id text NOT NULL,
                    account bytea NOT NULL,
                    envelope bytea NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (token_endpoint, client_id, account)
                )
                """,
                on: connection
            )
            try await execute(
                "CREATE TABLE IF NOT EXISTS \(unescaped: schemaTableName) (version integer NOT NULL)",
                on: connection
            )
            tableSchema = try await ownSchema(of: tableName, on: connection)
            schemaTableSchema = try await ownSchema(of: schemaTableName, on: connection)
        case let version? where version > Self.schemaVersion:
            throw OAuth2Error.store(
                "the token table \(self.table) has schema version \(version), newer than this version of swift-oauth2 reads (\(Self.schemaVersion)); upgrade swift-oauth2 instead of letting it guess"
            )
        case let version? where version < 1:
            throw OAuth2Error.store("the token table \(self.table) has schema version \(version), which no version of swift-oauth2 wrote")
        case .some:
            break
        }
        guard let tableSchema, let schemaTableSchema else {
            throw OAuth2Error.store("the token table \(table) or its schema table is missing after it was made")
        }
        let names = PreparedNames(
            table: Self.quote(tableSchema) + "." + tableName,
            schemaTable: Self.quote(schemaTableSchema) + "." + schemaTableName
        )
        switch version {
        case nil:
            try await execute("DELETE FROM \(unescaped: names.schemaTable)", on: connection)
            try await execute("INSERT INTO \(unescaped: names.schemaTable) (version) VALUES (\(Self.schemaVersion))", on: connection)
        case let version?:
            // Upgrades: one step per version, each in this transaction.
            for from in version..<Self.schemaVersion {
                try await Self.upgrade(from: from, connection: connection, store: self)
            }
            if version < Self.schemaVersion {
                try await execute("UPDATE \(unescaped: names.schemaTable) SET version = \(Self.schemaVersion)", on: connection)
            }
        }
        return names
    }

    /// The schema of the table `name` resolves to on the `search_path`, nil
    /// when there is none; a table the connecting role does not own is refused.
    func ownSchema(of name: String, on connection: PostgresConnection) async throws -> String? {
        guard
            let owner = try await values(
                "SELECT pg_get_userbyid(relowner)::text FROM pg_class WHERE oid = to_regclass(\(name))", as: String.self, on: connection
            ).first
        else { return nil }
        let role = try await values("SELECT current_user::text", as: String.self, on: connection).first
        guard owner == role else {
            throw OAuth2Error.store(
                "the token table \(name) belongs to the database role \(OAuth2Error.sanitize(String(owner.prefix(63)))), not to the role this store connects as; refusing to use it (its owner could read every token, and its triggers would run as this role): drop it, or make this role its owner"
            )
        }
        return try await values(
            "SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(\(name))",
            as: String.self, on: connection
        ).first
    }

    /// The step from schema `version` to the next. Version 1 is the first;
    /// a later one adds its step here.
    private static func upgrade(from version: Int, connection: PostgresConnection, store: PostgresTokenStore) async throws {
        throw OAuth2Error.store("the token table \(store.table) has schema version \(version), and no upgrade from it exists")
    }
}
