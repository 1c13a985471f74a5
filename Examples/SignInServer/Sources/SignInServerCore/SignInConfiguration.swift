import Foundation
import OAuth2

/// Everything the app needs to know, read from environment variables.
///
/// | variable | required | meaning |
/// |---|---|---|
/// | `SIGNIN_CLIENT_ID` | yes | the client id the provider issued |
/// | `SIGNIN_CLIENT_SECRET` | no | the client secret; unset for a public client (PKCE only) |
/// | `SIGNIN_AUTHORIZE_URL` | yes, unless discovered | the provider's authorization endpoint |
/// | `SIGNIN_TOKEN_URL` | yes, unless discovered | the provider's token endpoint |
/// | `SIGNIN_REVOKE_URL` | no | the provider's revocation endpoint (RFC 7009); sign-out revokes there |
/// | `SIGNIN_ISSUER` | with discovery | the provider's issuer; a callback's `iss` must equal it (RFC 9207) |
/// | `SIGNIN_REQUIRE_ISSUER` | no | `1` refuses a callback without `iss` (needs `SIGNIN_ISSUER`) |
/// | `SIGNIN_DISCOVER` | no | `1`: read the endpoints and OpenID Connect settings from the issuer's metadata at start; the three URLs above, when set, replace the discovered ones |
/// | `SIGNIN_REDIRECT_URI` | yes | this app's callback as the provider knows it, path `/callback` |
/// | `SIGNIN_API_URL` | yes, unless OpenID | the provider's API that names the user, such as `/api/me`; not needed with discovery and `openid` in `SIGNIN_SCOPES` (the ID token names the user) |
/// | `SIGNIN_USER_FIELD` | no | the JSON field of that answer holding the user name; `username` |
/// | `SIGNIN_SCOPES` | no | space-separated scopes to ask for; the provider's default when unset; with `openid` and an OpenID provider, users are identified by their ID token |
/// | `SIGNIN_STORE_DIR` | one of the two | the token store's directory (created 0700); sessions in memory |
/// | `SIGNIN_DATABASE_URL` | one of the two | `postgresql://user@host:port/database?sslmode=…`, no password: tokens and sessions in PostgreSQL, shared by every instance |
/// | `PGPASSWORD` | no | the database password |
/// | `SIGNIN_DATABASE_PASSWORD_FILE` | no | the same read from a file; not with `PGPASSWORD` |
/// | `SIGNIN_TOKEN_TABLE` | no | the tokens' table; `oauth2_tokens` |
/// | `SIGNIN_SESSION_TABLE` | no | the sessions' table; `signin_sessions` |
/// | `SIGNIN_STORE_KEY` | with a database | a 256-bit key (64 hex digits or base64) to encrypt the tokens with; the same on every instance |
/// | `SIGNIN_STORE_KEY_FILE` | no | the same key read from a 0600 file; not with `SIGNIN_STORE_KEY` |
/// | `SIGNIN_HOST` | no | the address to listen on; `127.0.0.1` |
/// | `SIGNIN_PORT` | no | the port to listen on; `8080` |
/// | `SIGNIN_EXPIRY_SKEW` | no | seconds before expiry a token is refreshed before use; `60` |
///
/// Discovery asks the provider, so a configuration with `SIGNIN_DISCOVER=1`
/// is read with ``load(environment:transport:)``; ``init(environment:)``
/// reads the others without a network.
public struct SignInConfiguration: Sendable {
    /// The framework's configuration: client and endpoints.
    public var oauth2: OAuth2Configuration
    /// This app's callback URL as registered with the provider; its path is `/callback`.
    public var redirectURI: URL
    /// The provider's API that tells who the token belongs to; `nil` when
    /// the ID token does (``identifiesUsersByIDToken``).
    public var apiURL: URL?
    /// The field of the API's JSON answer that holds the user name.
    public var userField: String
    /// The scopes to ask for; empty means the provider's default.
    public var scopes: [String]
    /// The token store's directory, when tokens are kept in files (and sessions in memory).
    public var storeDirectory: String?
    /// The key that encrypts the tokens, when one is configured (always with a database).
    public var storeKey: FileTokenStore.EncryptionKey?
    /// The PostgreSQL database that holds tokens and sessions, when one is configured.
    public var database: Database?
    /// The address to listen on.
    public var host: String
    /// The port to listen on; 0 picks a free one.
    public var port: Int

    /// The path the provider redirects back to.
    public static let callbackPath = "/callback"

    /// Sign in with Apple beside the provider, when configured (``OAuth2Configuration/signInWithApple(clientID:teamID:keyID:privateKeyPEM:server:)``).
    public var apple: OAuth2Configuration?
    /// Where Apple posts its answer, on this site: register it with Apple as the Return URL.
    public static let appleCallbackPath = "/callback/apple"
    /// Where the bounce page posts Apple's answer again, same-site, with the session cookie.
    public static let appleFinishPath = "/callback/apple/finish"

    /// The redirect URI sent to Apple: the public origin and ``appleCallbackPath``.
    public var appleRedirectURI: URL {
        URL(string: publicOrigin + Self.appleCallbackPath)!
    }

    /// Creates a configuration from values, for code that does not read the environment.
    public init(
        oauth2: OAuth2Configuration,
        redirectURI: URL,
        apiURL: URL?,
        userField: String = "username",
        scopes: [String] = [],
        storeDirectory: String? = nil,
        storeKey: FileTokenStore.EncryptionKey? = nil,
        database: Database? = nil,
        host: String = "127.0.0.1",
        port: Int = 8080,
        apple: OAuth2Configuration? = nil
    ) {
        self.apple = apple
        self.oauth2 = oauth2
        self.redirectURI = redirectURI
        self.apiURL = apiURL
        self.userField = userField
        self.scopes = scopes
        self.storeDirectory = storeDirectory
        self.storeKey = storeKey
        self.database = database
        self.host = host
        self.port = port
    }

    /// Reads the configuration from environment variables (see the table above),
    /// for a provider whose endpoints are given (no `SIGNIN_DISCOVER`).
    ///
    /// - Parameter environment: typically `ProcessInfo.processInfo.environment`.
    /// - Throws: ``ConfigurationError`` naming every missing or unusable
    ///   variable at once, so one run tells the operator everything to fix;
    ///   with `SIGNIN_DISCOVER=1`, one that points to ``load(environment:transport:)``.
    public init(environment: [String: String]) throws(ConfigurationError) {
        let settings = try SignInEnvironment(environment: environment)
        guard !settings.discover else {
            throw ConfigurationError(invalid: [
                (
                    "SIGNIN_DISCOVER",
                    "discovery asks the provider: read this configuration with SignInConfiguration.load(environment:transport:)"
                )
            ])
        }
        try self.init(settings: settings, metadata: nil)
    }

    /// Reads the configuration from environment variables (see the table
    /// above) and, with `SIGNIN_DISCOVER=1`, the issuer's metadata: OpenID
    /// Connect Discovery, or RFC 8414 metadata
    /// (``MetadataCache/metadata(issuer:issuerRule:timeout:)``).
    /// The endpoints come from there, unless a variable names them, and so do
    /// the OpenID Connect settings that verify ID tokens.
    ///
    /// The environment is checked first: a bad one never reaches the network.
    ///
    /// - Parameters:
    ///   - environment: typically `ProcessInfo.processInfo.environment`.
    ///   - transport: what discovery asks the provider through.
    /// - Throws: ``ConfigurationError`` naming every missing or unusable
    ///   variable; `SIGNIN_ISSUER` with the framework's code when discovery
    ///   fails (`issuer_mismatch`, `http_error`, `transport_error`, …).
    public static func load(environment: [String: String], transport: any HTTPTransport) async throws(ConfigurationError)
        -> SignInConfiguration
    {
        let settings = try SignInEnvironment(environment: environment)
        guard settings.discover, let issuer = settings.issuer else {
            return try SignInConfiguration(settings: settings, metadata: nil)
        }
        let metadata: AuthorizationServerMetadata
        do throws(OAuth2Error) {
            metadata = try await MetadataCache(transport: transport).metadata(issuer: issuer)
        } catch {
            throw ConfigurationError(invalid: [("SIGNIN_ISSUER", "discovery failed: \(error.code): \(error.message)")])
        }
        return try SignInConfiguration(settings: settings, metadata: metadata)
    }

    /// ``load(environment:transport:)`` through a ``CurlTransport`` of its
    /// own, closed before it returns: what the executable calls at start.
    public static func load(environment: [String: String]) async throws(ConfigurationError) -> SignInConfiguration {
        let transport = CurlTransport()
        let result: Result<SignInConfiguration, ConfigurationError>
        do throws(ConfigurationError) {
            result = .success(try await load(environment: environment, transport: transport))
        } catch {
            result = .failure(error)
        }
        await transport.shutdown()
        return try result.get()
    }

    /// Builds the framework's configuration from the checked variables and,
    /// with discovery, the issuer's metadata.
    private init(settings: SignInEnvironment, metadata: AuthorizationServerMetadata?) throws(ConfigurationError) {
        var problems = ConfigurationError()
        var oauth2: OAuth2Configuration?
        // The framework checks the client and its endpoints (https, or http on loopback).
        do throws(OAuth2Error) {
            if let metadata {
                var discovered = try OAuth2Configuration(
                    metadata: metadata, clientID: settings.clientID, clientSecret: settings.clientSecret.map { Secret($0) })
                // A variable that names an endpoint wins over the metadata:
                // OpenID Connect Discovery has no place for revocation, say.
                if let url = settings.authorizeURL { discovered.authorizationEndpoint = url }
                if let url = settings.tokenURL { discovered.tokenEndpoint = url }
                if let url = settings.revokeURL { discovered.revocationEndpoint = url }
                discovered.defaultScopes = settings.scopes
                discovered.expirySkew = .seconds(settings.skew)
                discovered.requiresIssuerInRedirect = discovered.requiresIssuerInRedirect || settings.requireIssuer
                try discovered.validate()
                oauth2 = discovered
            } else {
                oauth2 = settings.explicitConfiguration
            }
        } catch {
            problems.invalid.append(("SIGNIN_ISSUER", "\(error.code): \(error.message)"))
        }
        if let oauth2, settings.apiURL == nil, oauth2.openID == nil {
            // Only a discovered configuration gets here without an API.
            problems.invalid.append(
                ("SIGNIN_API_URL", "required: the issuer's metadata names no jwks_uri, so there is no ID token to say who the user is"))
        }
        guard problems.isEmpty, let oauth2 else {
            throw problems
        }
        self.init(
            oauth2: oauth2,
            redirectURI: settings.redirectURI,
            apiURL: settings.apiURL,
            userField: settings.userField,
            scopes: settings.scopes,
            storeDirectory: settings.storeDirectory,
            storeKey: settings.storeKey,
            database: settings.database,
            host: settings.host,
            port: settings.port,
            apple: settings.apple
        )
    }

    /// Whether the callback names the user by the token's verified ID token
    /// (``AccountKey/subject(issuer:subject:)``) rather than by the API:
    /// OpenID Connect is configured and `openid` is among the scopes.
    public var identifiesUsersByIDToken: Bool {
        oauth2.openID != nil && scopes.contains("openid")
    }

    /// Whether the app is served over https, judged by its public redirect
    /// URI (behind a TLS-terminating proxy the app itself speaks http).
    public var isServedOverHTTPS: Bool {
        redirectURI.scheme?.lowercased() == "https"
    }

    /// The app's public origin, `scheme://host[:port]`, as browsers send it in `Origin`.
    public var publicOrigin: String {
        let scheme = redirectURI.scheme?.lowercased() ?? "http"
        let host = redirectURI.host ?? ""
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return redirectURI.port.map { "\(scheme)://\(bracketed):\($0)" } ?? "\(scheme)://\(bracketed)"
    }
}
