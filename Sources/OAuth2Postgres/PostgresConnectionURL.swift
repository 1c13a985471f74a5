#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Logging
public import OAuth2
public import PostgresNIO
import NIOSSL

extension PostgresTokenStore {
    /// A `PostgresClient` configuration from a libpq-style URL:
    /// `postgresql://user@host:port/database?sslmode=…&sslrootcert=…`
    /// (`postgres://` too; port 5432 by default; an IPv6 host in brackets).
    ///
    /// `sslmode`: `require` (the default), `verify-ca` or `verify-full`:
    /// TLS or no connection, the server's certificate and name always
    /// verified, against `sslrootcert` when given, else the system's roots
    /// (stricter than libpq's `require`, which checks neither). `prefer`
    /// (TLS when the server offers it; `allow` is the same) and `disable`
    /// only when spelled out: someone on the network path can then read and
    /// change the token rows — put back a refresh token already spent,
    /// delete rows — so they are logged once at warning level, unless the
    /// host is a loopback one (`localhost`, 127.0.0.0/8, `::1`), where no one
    /// is on the path and a server without TLS (`sslmode=disable`) is normal.
    /// A Unix socket is not a URL here: make a
    /// `PostgresClient.Configuration(unixSocketPath:…)` (no TLS, none needed).
    ///
    /// - Parameters:
    ///   - text: the URL.
    ///   - password: the password, from wherever the app keeps it;
    ///     never part of the URL, which ends up in logs and shell histories.
    ///   - logger: where the warning about a `sslmode` without TLS goes.
    /// - Throws: `invalid_configuration` for a URL that is not of that form,
    ///   names a password, or has an unknown `sslmode`; the message never
    ///   repeats the URL's userinfo.
    public static func clientConfiguration(
        url text: String,
        password: String?,
        logger: Logger = Logger(label: "swift-oauth2.postgres")
    ) throws(OAuth2Error) -> PostgresClient.Configuration {
        let url = try DatabaseURL(text)
        url.warnWithoutTLS(logger)
        let tls: PostgresClient.Configuration.TLS =
            switch url.tls {
            case .disable: .disable
            case .prefer: .prefer(url.tlsConfiguration)
            case .require: .require(url.tlsConfiguration)
            }
        return PostgresClient.Configuration(
            host: url.host,
            port: url.port,
            username: url.user,
            password: password,
            database: url.database,
            tls: tls
        )
    }
}

/// A `postgresql://` URL, read: what both configurations are made of.
struct DatabaseURL {
    enum TLS {
        case disable, prefer, require
    }

    var host: String
    var port: Int
    var user: String
    var database: String
    var sslMode: String
    var tls: TLS
    var rootCertificate: String?

    init(_ text: String) throws(OAuth2Error) {
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
        var sslMode = "require"
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
        switch sslMode {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer
        case "require", "verify-ca", "verify-full": tls = .require
        default: throw invalid("has an sslmode this client does not know: \(OAuth2Error.sanitize(String(sslMode.prefix(20))))")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.user = user
        self.database = path
        self.sslMode = sslMode
        self.rootCertificate = rootCertificate
    }

    /// The certificate and host name are always verified when TLS is used.
    var tlsConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate {
            configuration.trustRoots = .file(rootCertificate)
        }
        return configuration
    }

    /// What a `sslmode` that lets the connection go without TLS risks, or
    /// nil when TLS is required or the host is a loopback one.
    var withoutTLSWarning: String? {
        guard tls != .require, !EndpointPolicy.isLoopback(host: host) else { return nil }
        return
            "the PostgreSQL URL's sslmode=\(sslMode) lets the connection to \(OAuth2Error.sanitize(String(host.prefix(100)))) go without TLS: anyone on the network path can then read and change the token rows (put back a refresh token already spent, delete rows). Use sslmode=verify-full (the default, require, verifies the same)"
    }

    func warnWithoutTLS(_ logger: Logger) {
        if let warning = withoutTLSWarning {
            logger.warning("\(warning)")
        }
    }
}

extension PostgresTokenStore {
    /// The configuration of one `PostgresConnection` from the same URL as
    /// ``clientConfiguration(url:password:logger:)`` reads: what
    /// ``UnreachableDatabase/failFast(probing:)`` connects with. The warning
    /// about a `sslmode` without TLS is not repeated here.
    ///
    /// - Throws: `invalid_configuration` as ``clientConfiguration(url:password:logger:)``
    ///   does, and for a `sslrootcert` that is not a readable PEM file.
    public static func connectionConfiguration(url text: String, password: String?) throws(OAuth2Error) -> PostgresConnection.Configuration
    {
        let url = try DatabaseURL(text)
        let tls: PostgresConnection.Configuration.TLS
        if url.tls == .disable {
            tls = .disable
        } else {
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: url.tlsConfiguration)
            } catch {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "the PostgreSQL URL's sslrootcert is not a readable file of PEM certificates")
            }
            tls = url.tls == .prefer ? .prefer(context) : .require(context)
        }
        return PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: password, database: url.database, tls: tls)
    }
}
