import OAuth2CLI

// `oauth2` with the PostgreSQL store: SwiftNIO and postgres-nio load only here.
TokenDatabases.installed = TokenDatabases(open: PostgresDatabase.open)
await OAuth2Command.runCommandLine()
