import PostgresNIO

extension SignInConfiguration {
    /// Where several instances keep what they share: the users' tokens
    /// (``PostgresTokenStore``, encrypted with ``SignInConfiguration/storeKey``)
    /// and the sessions (``PostgresSessionStore``).
    public struct Database: Sendable {
        /// The client's settings: host, user, password, database, TLS.
        public var client: PostgresClient.Configuration
        /// The tokens' table.
        public var tokenTable: String
        /// The sessions' table.
        public var sessionTable: String

        /// Creates the database settings; the table names default to those the
        /// environment's `SIGNIN_TOKEN_TABLE` and `SIGNIN_SESSION_TABLE` default to.
        public init(client: PostgresClient.Configuration, tokenTable: String = "oauth2_tokens", sessionTable: String = "signin_sessions") {
            self.client = client
            self.tokenTable = tokenTable
            self.sessionTable = sessionTable
        }
    }
}
