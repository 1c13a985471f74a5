#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOSSL
import OAuth2
import PostgresNIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Failures as `store_error`, worded from what they are, never from what
/// they carry (a query's bound values, a server's message).
extension PostgresTokenStore {
    /// Refuses an empty account name before anything is sent to the database.
    static func requireAccount(_ account: String) throws(OAuth2Error) {
        guard !account.isEmpty else {
            throw OAuth2Error.store("the account name is empty")
        }
    }

    /// A failure as `store_error`: what could not be done and why, from the
    /// error's kind and SQLSTATE only. postgres-nio's errors can carry the
    /// query and its bound values (tokens), and a server message can quote
    /// data; neither is ever put in the message.
    func storeError(_ error: any Error, doing action: String) -> OAuth2Error {
        if let error = error as? OAuth2Error { return error }
        if let error = error as? PostgresTransactionError, let cause = error.closureError ?? error.beginError ?? error.commitError {
            return storeError(cause, doing: action)
        }
        if error is CancellationError || Task.isCancelled {
            return OAuth2Error(code: .cancelled, message: "\(action) was cancelled")
        }
        if let error = error as? ConnectionTimeout {
            return OAuth2Error.store(
                "could not \(action) in PostgreSQL: no connection to the database within \(error.timeout) (is it running and reachable, and are the credentials right?)"
            )
        }
        if let error = error as? Unreachable {
            return storeError(error.error, doing: action)
        }
        if let error = error as? StatementTimeout {
            return OAuth2Error.store("could not \(action) in PostgreSQL: the database did not answer within \(error.timeout)")
        }
        guard let error = error as? PSQLError else {
            return OAuth2Error.store("could not \(action) in PostgreSQL: \(type(of: error))")
        }
        let reason: String
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? "?"
            reason = "the server answered SQLSTATE \(OAuth2Error.sanitize(String(state.prefix(5))))\(Self.explanation(ofSQLState: state))"
        case .connectionError where error.underlying is NIOSSLError:
            reason =
                "the TLS handshake with the database failed (its certificate must be for this host name and signed by a root this client trusts: the system's, or the file sslrootcert= names)"
        case .connectionError:
            reason =
                Self.systemReason(error.underlying).map { "could not connect to the database: \($0)" }
                ?? "the connection to the database failed"
        case .serverClosedConnection, .uncleanShutdown:
            reason = "the connection to the database failed or was closed"
        case .clientClosedConnection, .poolClosed:
            reason = "the PostgreSQL client is shut down or not running (run the PostgresClient)"
        case .sslUnsupported:
            reason =
                "the database offers no TLS, and the URL's sslmode (require by default) needs it (for a server on this machine: sslmode=disable)"
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            reason = "TLS to the database failed"
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            reason = "authenticating to the database failed"
        case .queryCancelled:
            reason = "the query was cancelled"
        default:
            reason = "postgres-nio failed (\(error.code))"
        }
        return OAuth2Error.store("could not \(action) in PostgreSQL: \(reason)")
    }

    /// Why a connection could not be made, in the system's words, for the
    /// reasons a person can act on: read from the description of SwiftNIO's
    /// error (this module does not import SwiftNIO's own error types), and
    /// only ever one of these fixed texts.
    static func systemReason(_ error: (any Error)?) -> String? {
        guard let error else { return nil }
        let text = String(describing: error)
        for code in [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, ECONNRESET, EACCES] where text.contains("(errno: \(code))") {
            return String(cString: strerror(code)).lowercased()
        }
        if text.contains("DNS error") {
            return "its host name could not be resolved"
        }
        return nil
    }

    private static func explanation(ofSQLState state: String) -> String {
        switch state {
        case "28P01", "28000": " (authentication failed)"
        case "3D000": " (no such database)"
        case "42P01": " (no such table)"
        case "42501": " (permission denied)"
        case "53300": " (too many connections)"
        case "57P01", "57P02", "57P03": " (the server is shutting down or starting up)"
        case "25006": " (the database is read-only)"
        case "53100": " (the database's disk is full)"
        default: ""
        }
    }
}
