import Logging
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A database that keeps tokens: PostgreSQL, in `oauth2-postgres`.
package protocol TokenDatabase: Sendable {
    /// Runs the database's connections until the task is cancelled.
    func run() async

    /// The store of `binding`'s tokens in `table`, encrypted with `key`, or
    /// readable when `key` is nil (the caller has checked that this is wanted).
    func store(
        binding: TokenBinding, table: String, key: FileTokenStore.EncryptionKey?, timeout: Duration, logger: Logger
    ) throws -> any TokenStore
}

/// How an executable with a database driver opens a store URL's database.
///
/// `oauth2` has none: it starts faster because it links neither SwiftNIO
/// nor full Foundation. `oauth2-postgres` installs the PostgreSQL driver
/// before it runs the command, and `oauth2` hands it every command whose
/// store is a `postgresql://` URL.
package struct TokenDatabases: Sendable {
    /// Opens the database at `url` with `password`.
    package let open: @Sendable (_ url: String, _ password: String?, _ logger: Logger) throws -> any TokenDatabase

    package init(open: @escaping @Sendable (_ url: String, _ password: String?, _ logger: Logger) throws -> any TokenDatabase) {
        self.open = open
    }

    private static let storage = LockedValue<TokenDatabases?>(nil)

    /// The driver this executable installed, if any.
    package static var installed: TokenDatabases? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    /// The executable that has the PostgreSQL driver, beside this one.
    static let databaseExecutableName = "oauth2-postgres"

    /// Replaces this process with `oauth2-postgres` from this executable's
    /// directory, with the same arguments and environment. Returns only by
    /// throwing, when there is no such executable or it cannot be started.
    static func continueInDatabaseExecutable() throws -> Never {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else {
            throw UsageError("this oauth2 has no PostgreSQL driver and cannot find its own path to look for \(databaseExecutableName)")
        }
        let me = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let directory = me.lastIndex(of: "/").map { String(me[..<$0]) } ?? "."
        let sibling = directory + "/" + databaseExecutableName
        guard access(sibling, X_OK) == 0 else {
            throw UsageError(
                "this oauth2 has no PostgreSQL driver, and there is no \(databaseExecutableName) beside it (\(directory)) to run the command with a PostgreSQL store: build and install both products"
            )
        }
        execv(sibling, CommandLine.unsafeArgv)
        let reason = String(cString: strerror(errno))
        throw UsageError("could not start \(sibling) for the PostgreSQL store: \(reason)")
    }
}
