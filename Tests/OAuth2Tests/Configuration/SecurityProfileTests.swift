import Crypto
import Foundation
import OAuth2Testing
import Testing
import _CryptoExtras
@testable import OAuth2

/// The FAPI 2.0 switch: what it turns on, what it refuses and why.
@Suite struct SecurityProfileTests {
    static let parURL = URL(string: "https://idp.example/oauth/par")!

    /// A private_key_jwt client with an ES256 key, a PAR endpoint and an issuer: all FAPI 2.0 needs.
    static func configuration(key: JWTSigningKey? = nil) throws -> OAuth2Configuration {
        var configuration = try OAuth2Configuration(
            clientID: "client-1",
            authorizationEndpoint: Fixture.authorizeURL,
            tokenEndpoint: Fixture.tokenURL,
            clientAuthentication: .privateKeyJWT,
            issuer: "https://idp.example",
            clientAssertionKey: try key ?? JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "k1")
        )
        configuration.pushedAuthorizationRequestEndpoint = parURL
        return configuration
    }

    /// The message of the error `validate()` throws, or `nil` when it throws none.
    static func refusal(_ configuration: OAuth2Configuration) -> String? {
        do {
            try configuration.validate()
            return nil
        } catch {
            #expect(error.code == .invalidConfiguration)
            return error.message
        }
    }

    @Test func turningOnFAPI2TakesOnItsDuties() throws {
        var configuration = try Self.configuration()
        #expect(configuration.pushedAuthorization == .automatic)
        #expect(configuration.dpop == nil)
        #expect(!configuration.requiresIssuerInRedirect)
        configuration.securityProfile = .fapi2
        #expect(configuration.pushedAuthorization == .always)
        #expect(configuration.dpop?.algorithm == .es256)
        #expect(configuration.requiresIssuerInRedirect)
        try configuration.validate()
        #expect("\(SecurityProfile.fapi2)" == "FAPI 2.0 Security Profile")
    }

    @Test func aFAPI2AuthorizationIsPushedWithAProofAndAKeyAssertion() async throws {
        var configuration = try Self.configuration()
        configuration.securityProfile = .fapi2
        let harness = try ClientHarness(configuration: configuration)
        harness.transport.enqueue(json: #"{"request_uri":"urn:x:1","expires_in":60}"#, status: 201, for: Self.parURL)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        #expect(push.headers[HTTPField.Name("DPoP")!] != nil)
        let fields = Fixture.formFields(push.body)
        #expect(fields["client_assertion_type"] == TokenRequestBuilder.clientAssertionType)
        #expect(fields["code_challenge_method"] == "S256")
        #expect(fields["dpop_jkt"] == pending.dpopKey?.thumbprint)
        #expect(pending.requiresIssuer)
    }

    @Test func aSecretBasedClientIsRefused() throws {
        var configuration = try OAuth2Configuration(
            clientID: "client-1", clientSecret: Secret("s3cret"), authorizationEndpoint: Fixture.authorizeURL,
            tokenEndpoint: Fixture.tokenURL, issuer: "https://idp.example")
        configuration.pushedAuthorizationRequestEndpoint = Self.parURL
        configuration.securityProfile = .fapi2
        let message = try #require(Self.refusal(configuration))
        #expect(message.hasPrefix("FAPI 2.0 Security Profile: clients shall authenticate with private_key_jwt or mutual TLS"))
        #expect(message.contains("client_secret_basic"))
        #expect(throws: OAuth2Error.self) { try OAuth2Provider(configuration: configuration, transport: CannedTransport()) }
    }

    @Test func turningADutyOffAgainIsRefused() throws {
        var configuration = try Self.configuration()
        configuration.securityProfile = .fapi2

        var bearer = configuration
        bearer.dpop = nil
        #expect(Self.refusal(bearer)?.contains("sender-constrained") == true)

        var unpushed = configuration
        unpushed.pushedAuthorization = .automatic
        #expect(Self.refusal(unpushed)?.contains("pushed authorization requests") == true)

        var noEndpoint = configuration
        noEndpoint.pushedAuthorizationRequestEndpoint = nil
        #expect(Self.refusal(noEndpoint)?.contains("pushed authorization request endpoint") == true)

        var noIss = configuration
        noIss.requiresIssuerInRedirect = false
        #expect(Self.refusal(noIss)?.contains("RFC 9207") == true)

        var password = configuration
        password.allowsPasswordGrant = true
        #expect(Self.refusal(password)?.contains("password") == true)

        var rsaDPoP = configuration
        rsaDPoP.dpop = DPoPSettings(algorithm: .rs256)
        #expect(Self.refusal(rsaDPoP)?.contains("the DPoP key algorithm is RS256") == true)

        var unsetDPoP = configuration
        unsetDPoP.dpop = DPoPSettings()
        #expect(Self.refusal(unsetDPoP)?.contains("DPoPSettings.algorithm") == true)
    }

    @Test func anRS256ClientKeyIsRefusedAndPS256Accepted() throws {
        let pem = JOSEFixtures.rsaKey.pemRepresentation
        var rs256 = try Self.configuration(key: JWTSigningKey.rsa(pem: pem, algorithm: .rs256))
        rs256.securityProfile = .fapi2
        #expect(Self.refusal(rs256)?.contains("the client's key signs RS256") == true)
        var ps256 = try Self.configuration(key: JWTSigningKey.rsa(pem: pem, algorithm: .ps256))
        ps256.securityProfile = .fapi2
        #expect(Self.refusal(ps256) == nil)
    }

    @Test func idTokensAreHeldToThePermittedAlgorithms() throws {
        let jwks = URL(string: "https://idp.example/jwks")!
        // Set before the profile: narrowed to the permitted ones the provider uses.
        var narrowed = try Self.configuration()
        narrowed.openID = OpenIDSettings(jwksURI: jwks, signingAlgorithms: [.rs256, .ps256, .es256])
        narrowed.securityProfile = .fapi2
        #expect(narrowed.openID?.signingAlgorithms == [.ps256, .es256])
        #expect(Self.refusal(narrowed) == nil)

        // A provider that signs with none of them is refused, naming the rule.
        var rs256Only = try Self.configuration()
        rs256Only.openID = OpenIDSettings(jwksURI: jwks, signingAlgorithms: [.rs256])
        rs256Only.securityProfile = .fapi2
        let refusal = try #require(Self.refusal(rs256Only))
        #expect(refusal.contains("§5.4") && refusal.contains("ID tokens signed with RS256"), "\(refusal)")

        // Set after the profile: refused too, not silently accepted.
        var late = try Self.configuration()
        late.securityProfile = .fapi2
        late.openID = OpenIDSettings(jwksURI: jwks, signingAlgorithms: [.es256, .rs256])
        #expect(Self.refusal(late)?.contains("ID tokens signed with RS256") == true)
    }

    @Test func aMachineClientNeedsNoPushedRequests() throws {
        var configuration = try OAuth2Configuration(
            clientID: "client-1", tokenEndpoint: Fixture.tokenURL, clientAuthentication: .privateKeyJWT,
            clientAssertionKey: JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation))
        configuration.securityProfile = .fapi2
        #expect(Self.refusal(configuration) == nil)
    }

    @Test func withoutAProfileNothingChanges() throws {
        var configuration = try OAuth2Configuration(
            clientID: "client-1", clientSecret: Secret("s3cret"), tokenEndpoint: Fixture.tokenURL, allowsPasswordGrant: true)
        configuration.securityProfile = nil
        #expect(Self.refusal(configuration) == nil)
        #expect(configuration.dpop == nil)
    }
}
