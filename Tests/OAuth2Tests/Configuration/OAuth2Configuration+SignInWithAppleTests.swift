import Crypto
import Foundation
import Testing
@testable import OAuth2

/// The Sign in with Apple configuration, as "Sign in with Apple REST API" lists
/// Apple's endpoints and "Generate and validate tokens" its client secret.
@Suite struct SignInWithAppleConfigurationTests {
    static let pem = P256.Signing.PrivateKey().pemRepresentation

    @Test func itNamesApplesEndpointsScopesAndClientAuthentication() throws {
        let configuration = try OAuth2Configuration.signInWithApple(
            clientID: "com.example.web", teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: Self.pem)
        #expect(configuration.authorizationEndpoint?.absoluteString == "https://appleid.apple.com/auth/authorize")
        #expect(configuration.tokenEndpoint.absoluteString == "https://appleid.apple.com/auth/token")
        #expect(configuration.revocationEndpoint?.absoluteString == "https://appleid.apple.com/auth/revoke")
        #expect(configuration.openID?.jwksURI.absoluteString == "https://appleid.apple.com/auth/keys")
        #expect(configuration.openID?.signingAlgorithms == [.rs256])
        #expect(configuration.issuer == "https://appleid.apple.com")
        #expect(!configuration.requiresIssuerInRedirect)
        #expect(configuration.defaultScopes == ["openid", "name", "email"])
        #expect(configuration.responseMode == .formPost)
        #expect(configuration.clientAuthentication == .clientSecretPost)
        #expect(configuration.clientSecret == nil)
        let signed = try #require(configuration.signedClientSecret)
        #expect(signed.issuer == "TEAM123456")
        #expect(signed.audience == "https://appleid.apple.com")
        #expect(signed.key.keyID == "KEY1234567")
        #expect(signed.key.algorithm == .es256)
        #expect(signed.lifetime <= SignedClientSecret.maximumLifetime)
    }

    @Test func theAuthorizationURLAsksForAFormPostWithANonce() async throws {
        let configuration = try OAuth2Configuration.signInWithApple(
            clientID: "com.example.web", teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: Self.pem)
        let pending = try AuthorizationRequestBuilder.make(
            configuration: configuration, redirectURI: URL(string: "https://app.example.com/apple/callback")!,
            scopes: configuration.defaultScopes, additionalParameters: [], now: FlowFixtures.requestedAt)
        let fields = Dictionary(uniqueKeysWithValues: try FormURLEncoding.decode(try #require(pending.url.query)[...]))
        #expect(fields["response_type"] == "code")
        #expect(fields["response_mode"] == "form_post")
        #expect(fields["scope"] == "openid name email")
        #expect(fields["nonce"] != nil)
        #expect(fields["client_id"] == "com.example.web")
    }

    @Test func aKeyThatIsNotP256IsRefused() throws {
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        for pem in [p384, "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----"] {
            let error = FlowFixtures.error { () throws(OAuth2Error) in
                try OAuth2Configuration.signInWithApple(clientID: "c", teamID: "T", keyID: "K", privateKeyPEM: pem)
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error.map { !$0.message.contains("PRIVATE KEY") } ?? true)
        }
    }

    @Test func anotherServerIsForTestsAndHeldToTheEndpointRules() throws {
        let local = try OAuth2Configuration.signInWithApple(
            clientID: "c", teamID: "T", keyID: "K", privateKeyPEM: Self.pem, server: URL(string: "http://127.0.0.1:8123/")!)
        #expect(local.tokenEndpoint.absoluteString == "http://127.0.0.1:8123/auth/token")
        #expect(local.issuer == "http://127.0.0.1:8123")
        #expect(local.signedClientSecret?.audience == "http://127.0.0.1:8123")
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration.signInWithApple(
                clientID: "c", teamID: "T", keyID: "K", privateKeyPEM: Self.pem, server: URL(string: "http://apple.example")!)
        }
        #expect(error?.code == .insecureEndpoint)
    }
}
