#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import OAuth2
public import PostgresNIO
import NIOSSL

extension PostgresTokenStore {
    /// A `PostgresClient` configuration from a libpq-style URL:
    /// `postgresql://user@host:port/database?sslmode=…&sslrootcert=…`
    /// (`postgres://` too; port 5432 by default; an IPv6 host in brackets).
    ///
    /// `sslmode`: `disable`; `prefer` (the default: TLS when the server
    /// offers it); `require`, `verify-ca` or `verify-full`: TLS or no
    /// connection, the server's certificate and name always verified (against
    /// `sslrootcert` when given, else the system's roots).
    ///
    /// - Parameters:
    ///   - text: the URL.
    ///   - password: the password, from wherever the app keeps it;
    ///     never part of the URL, which ends up in logs and shell histories.
    /// - Throws: `invalid_configuration` for a URL that is not of that form,
    ///   names a password, or has an unknown `sslmode`; the message never
    ///   repeats the URL's userinfo.
    public static func clientConfiguration(url text: String, password: String?) throws(OAuth2Error) -> PostgresClient.Configuration {
        func invalid(_ problem: String) -> OAuth2Error {
            OAuth2Error(code: .invalidConfiguration, message: "the PostgreSQL URL \(problem)")
        }
        guard let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "postgresql" || scheme == "postgres"
        else {
            throw invalid("must look like postgresql://user@host:port/database")
        }
        guard components.password == nil else {
            throw invalid("has a password in it; give the password separately (PGPASSWORD or a file)")
        }
        guard let user = components.user, !user.isEmpty else {
            throw invalid("has no user name (postgresql://user@host/database)")
        }
        guard var host = components.host, !host.isEmpty else {
            throw invalid("has no host")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !path.isEmpty, !path.contains("/") else {
            throw invalid("has no database name (postgresql://user@host/database)")
        }
        var sslMode = "prefer"
        var rootCertificate: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode": sslMode = item.value ?? ""
            case "sslrootcert": rootCertificate = item.value
            case "application_name", "connect_timeout": break
            default:
                throw invalid("has a parameter this client does not know: \(OAuth2Error.sanitize(String(item.name.prefix(40))))")
            }
        }
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate {
            tlsConfiguration.trustRoots = .file(rootCertificate)
        }
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(tlsConfiguration)
        case "require", "verify-ca", "verify-full": tls = .require(tlsConfiguration)
        default: throw invalid("has an sslmode this client does not know: \(OAuth2Error.sanitize(String(sslMode.prefix(20))))")
        }
        return PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: user,
            password: password,
            database: path,
            tls: tls
        )
    }
}
