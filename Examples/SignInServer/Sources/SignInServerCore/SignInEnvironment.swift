import Foundation
import OAuth2

/// The `SIGNIN_*` variables of ``SignInConfiguration``, each read and checked
/// on its own, before any endpoint is built: discovery needs them before it
/// can ask the provider.
struct SignInEnvironment {
    var clientID: String
    var clientSecret: String?
    var authorizeURL: URL?
    var tokenURL: URL?
    var revokeURL: URL?
    var issuer: String?
    var requireIssuer: Bool
    var discover: Bool
    var redirectURI: URL
    var apiURL: URL?
    var userField: String
    var scopes: [String]
    var database: SignInConfiguration.Database?
    var storeDirectory: String?
    var storeKey: FileTokenStore.EncryptionKey?
    var host: String
    var port: Int
    var skew: Int
    /// The framework's configuration from the variables' endpoints, without discovery.
    var explicitConfiguration: OAuth2Configuration?
    /// Sign in with Apple, when `SIGNIN_APPLE_CLIENT_ID` is set.
    var apple: OAuth2Configuration?

    /// - Throws: ``ConfigurationError`` naming every missing or unusable variable at once.
    init(environment: [String: String]) throws(ConfigurationError) {
        var reader = EnvironmentReader(environment)

        let discover = reader.flag("SIGNIN_DISCOVER")
        let clientID = reader.required("SIGNIN_CLIENT_ID")
        let clientSecret = reader.optional("SIGNIN_CLIENT_SECRET")
        let authorizeURL = reader.url("SIGNIN_AUTHORIZE_URL", required: !discover)
        let tokenURL = reader.url("SIGNIN_TOKEN_URL", required: !discover)
        let revokeURL = reader.url("SIGNIN_REVOKE_URL", required: false)
        let issuer = reader.optional("SIGNIN_ISSUER")
        let requireIssuer = reader.flag("SIGNIN_REQUIRE_ISSUER")
        let redirectURI = reader.url("SIGNIN_REDIRECT_URI", required: true)
        let scopes = (reader.optional("SIGNIN_SCOPES") ?? "").split(separator: " ").map(String.init)
        // With an OpenID provider and `openid` asked for, the ID token names
        // the user; whether the issuer is one, discovery tells.
        let apiURL = reader.url("SIGNIN_API_URL", required: !(discover && scopes.contains("openid")))
        let userField = reader.optional("SIGNIN_USER_FIELD") ?? "username"
        let database = reader.database()
        let storeDirectory = reader.storeDirectory(withDatabase: database != nil || reader.optional("SIGNIN_DATABASE_URL") != nil)
        let storeKey = reader.storeKey(text: "SIGNIN_STORE_KEY", file: "SIGNIN_STORE_KEY_FILE")
        if database != nil && storeKey == nil && reader.error.invalid.allSatisfy({ !$0.variable.hasPrefix("SIGNIN_STORE_KEY") }) {
            reader.invalid(
                "SIGNIN_STORE_KEY",
                "required with SIGNIN_DATABASE_URL (or SIGNIN_STORE_KEY_FILE): the tokens in the database are encrypted, with the same key on every instance"
            )
        }
        let host = reader.optional("SIGNIN_HOST") ?? "127.0.0.1"
        let port = reader.integer("SIGNIN_PORT", range: 0...65535) ?? 8080
        let skew = reader.integer("SIGNIN_EXPIRY_SKEW", range: 0...86_400) ?? 60

        if let redirectURI {
            reader.checkRedirectURI(redirectURI, variable: "SIGNIN_REDIRECT_URI")
        }
        if requireIssuer && issuer == nil {
            reader.invalid("SIGNIN_REQUIRE_ISSUER", "needs SIGNIN_ISSUER, the issuer to compare with")
        }
        if discover && issuer == nil {
            reader.invalid("SIGNIN_DISCOVER", "needs SIGNIN_ISSUER, the issuer whose metadata to read")
        }
        if let apiURL {
            // The API receives the bearer token: hold it to the framework's own
            // rule for endpoints (https, or http on loopback) now, not at the first request.
            do throws(OAuth2Error) {
                _ = try OAuth2Configuration(clientID: "check", tokenEndpoint: apiURL)
            } catch {
                reader.invalid("SIGNIN_API_URL", error.message)
            }
        }

        // The framework checks the client and its endpoints (https, or http on loopback).
        var explicitConfiguration: OAuth2Configuration?
        if !discover, let clientID, let authorizeURL, let tokenURL {
            do throws(OAuth2Error) {
                explicitConfiguration = try OAuth2Configuration(
                    clientID: clientID,
                    clientSecret: clientSecret.map { Secret($0) },
                    authorizationEndpoint: authorizeURL,
                    tokenEndpoint: tokenURL,
                    revocationEndpoint: revokeURL,
                    defaultScopes: scopes,
                    expirySkew: .seconds(skew),
                    issuer: issuer,
                    // A missing issuer is reported above, under SIGNIN_REQUIRE_ISSUER.
                    requiresIssuerInRedirect: requireIssuer && issuer != nil
                )
            } catch {
                reader.invalid("SIGNIN_AUTHORIZE_URL, SIGNIN_TOKEN_URL, SIGNIN_REVOKE_URL", "\(error.code): \(error.message)")
            }
        }

        let apple = reader.apple()

        guard reader.error.isEmpty, let clientID, let redirectURI, storeDirectory != nil || database != nil,
            discover || explicitConfiguration != nil
        else {
            throw reader.error
        }
        self.explicitConfiguration = explicitConfiguration
        self.apple = apple
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.authorizeURL = authorizeURL
        self.tokenURL = tokenURL
        self.revokeURL = revokeURL
        self.issuer = issuer
        self.requireIssuer = requireIssuer
        self.discover = discover
        self.redirectURI = redirectURI
        self.apiURL = apiURL
        self.userField = userField
        self.scopes = scopes
        self.database = database
        self.storeDirectory = storeDirectory
        self.storeKey = storeKey
        self.host = host
        self.port = port
        self.skew = skew
    }
}
