public import PostgresNIO

extension PostgresTokenStore {
    /// What a store call does while no connection to the database can be made.
    ///
    /// The pool of a `PostgresClient` keeps trying to connect, backing off,
    /// and a call waits for it: right for a server, for which the database
    /// may be back in a moment, but a command-line tool's user would wait
    /// the whole timeout to learn what the first attempt already knew.
    public struct UnreachableDatabase: Sendable {
        enum Kind: Sendable {
            case wait
            case failFast(PostgresConnection.Configuration)
        }

        let kind: Kind

        /// A call waits for the pool, which keeps trying, up to the store's
        /// `connectionTimeout` (the lock: its own timeout); then `store_error`.
        /// The default: for a server.
        public static let waitForConnection = Self(kind: .wait)

        /// A call fails with `store_error` and the reason (connection
        /// refused, TLS, authentication, no such database) as soon as a
        /// connection cannot be made: for a command-line tool.
        ///
        /// When the pool has not handed a call a connection within
        /// ``probeDelay``, the store makes one connection of its own with
        /// `configuration` (the client's: ``PostgresTokenStore/connectionConfiguration(url:password:)``),
        /// closes it, and fails the call when it could not be made.
        public static func failFast(probing configuration: PostgresConnection.Configuration) -> Self {
            Self(kind: .failFast(configuration))
        }

        /// How long a call waits for the pool before ``failFast(probing:)`` probes:
        /// long enough that a reachable database's pool usually answers first.
        public static let probeDelay: Duration = .milliseconds(100)
    }
}
