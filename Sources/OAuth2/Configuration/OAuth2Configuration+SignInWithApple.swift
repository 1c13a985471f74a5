#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Configuration {
    /// Sign in with Apple's server, the issuer of its ID tokens.
    public static let signInWithAppleServer = URL(string: "https://appleid.apple.com")!

    /// The configuration of a Sign in with Apple client, as Apple's "Sign in
    /// with Apple REST API" describes it.
    ///
    /// - the endpoints under `server`: `/auth/authorize`, `/auth/token`,
    ///   `/auth/revoke`, and the key set `/auth/keys` (RS256);
    /// - the issuer `server` (`https://appleid.apple.com`), which the ID
    ///   tokens' `iss` must be; Apple sends no `iss` in the authorization response;
    /// - the scopes `openid name email`, answered with `response_mode=form_post`
    ///   (Apple requires it for `name` and `email`): finish with
    ///   ``OAuth2Grant/authorizationCode(formPost:pending:)``;
    /// - `client_secret_post` with a ``SignedClientSecret``: an ES256 JWT
    ///   signed with the `.p8` key (`kid` the key id, `iss` the team id, `sub`
    ///   the client id, `aud` the server), made and renewed by the library.
    ///
    /// ```swift
    /// let configuration = try OAuth2Configuration.signInWithApple(
    ///     clientID: "com.example.web", teamID: "ABCDE12345", keyID: "KEY1234567",
    ///     privateKeyPEM: try String(contentsOfFile: "/etc/myapp/AuthKey_KEY1234567.p8", encoding: .utf8))
    /// ```
    ///
    /// - Parameters:
    ///   - clientID: the Services ID (web) or the app's bundle id (an app's own tokens).
    ///   - teamID: the 10-character team id.
    ///   - keyID: the 10-character id of the Sign in with Apple key.
    ///   - privateKeyPEM: the `.p8` file's text: a PKCS#8 P-256 private key.
    ///   - server: Apple's server; another only for tests.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the key is not a
    ///   P-256 private key or an id is empty; `insecure_endpoint` for a
    ///   `server` that is not `https` (or loopback).
    public static func signInWithApple(
        clientID: String,
        teamID: String,
        keyID: String,
        privateKeyPEM: String,
        server: URL = signInWithAppleServer
    ) throws(OAuth2Error) -> OAuth2Configuration {
        let key = try JWTSigningKey.ecdsa(pem: privateKeyPEM, keyID: keyID)
        guard key.algorithm == .es256, !keyID.isEmpty else {
            throw OAuth2Error(code: .invalidConfiguration, message: "Sign in with Apple needs its key id and a P-256 private key (ES256)")
        }
        var base = server.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        func endpoint(_ path: String) throws(OAuth2Error) -> URL {
            guard let url = URL(string: base + path) else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the Sign in with Apple server is not a URL")
            }
            return url
        }
        var configuration = try OAuth2Configuration(
            clientID: clientID,
            authorizationEndpoint: try endpoint("/auth/authorize"),
            tokenEndpoint: try endpoint("/auth/token"),
            revocationEndpoint: try endpoint("/auth/revoke"),
            defaultScopes: ["openid", "name", "email"],
            clientAuthentication: .clientSecretPost,
            issuer: base,
            openID: OpenIDSettings(jwksURI: try endpoint("/auth/keys"), signingAlgorithms: [.rs256]),
            signedClientSecret: try SignedClientSecret(issuer: teamID, audience: base, key: key)
        )
        configuration.responseMode = .formPost
        try configuration.validate()
        return configuration
    }
}
