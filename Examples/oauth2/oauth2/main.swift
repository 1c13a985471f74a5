import OAuth2CLI

// `oauth2` without a database driver: a command with a PostgreSQL store goes
// on in `oauth2-postgres` beside it.
await OAuth2Command.runCommandLine()
