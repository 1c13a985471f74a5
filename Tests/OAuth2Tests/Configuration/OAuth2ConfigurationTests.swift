import Foundation
@testable import OAuth2
import Testing

@Suite struct OAuth2ConfigurationTests {
    func configuration(token: String, authorize: String? = nil, secret: String? = "s") throws(OAuth2Error) -> OAuth2Configuration {
        try OAuth2Configuration(
            clientID: "id",
            clientSecret: secret.map(Secret.init),
            authorizationEndpoint: authorize.flatMap(URL.init(string:)),
            tokenEndpoint: URL(string: token)!
        )
    }

    @Test(arguments: [
        "http://idp.example/token",
        "http://127.0.0.1.evil.example/token",
        "http://localhost.evil.example/token",
        "http://128.0.0.1/token",
        "http://127.0.0.256/token",
        // Percent-encoded hosts are judged decoded: this one is 127.0.0.1.evil.example.
        "http://127.0.0.1%2Eevil.example/token",
        "ftp://idp.example/token",
        "file:///etc/token",
    ])
    func plainHTTPToANonLoopbackHostIsRefused(_ url: String) {
        do {
            _ = try configuration(token: url)
            Issue.record("expected insecure_endpoint for \(url)")
        } catch {
            #expect(error.code == .insecureEndpoint)
            #expect(error.message.contains("https"))
        }
    }

    @Test(arguments: [
        "https://idp.example/token",
        "http://127.0.0.1:8000/token",
        "http://127.8.9.10/token",
        "http://localhost:8000/token",
        "http://LOCALHOST/token",
        "http://[::1]:8000/token",
        "http://loc%61lhost:8000/token",
    ])
    func httpsAndLoopbackAreAccepted(_ url: String) throws {
        let configuration = try configuration(token: url)
        #expect(configuration.tokenEndpoint.absoluteString == url)
    }

    @Test(arguments: [
        "https://Idp.Example/token", "http://[::1]:8000/x", "http://127.0.0.1/x", "http://loc%61lhost/x",
        "http://user:pw@host.example:80/", "https://xn--bcher-kva.example/", "https://b%C3%BCcher.example/",
    ])
    func theEndpointCheckReadsTheHostAsURLHostGivesIt(_ text: String) throws {
        let url = try #require(URL(string: text))
        #expect(EndpointPolicy.host(of: url) == url.host)
    }

    @Test func everyEndpointIsHeldToTheRule() {
        #expect(throws: OAuth2Error.self) {
            try configuration(token: "https://idp.example/token", authorize: "http://idp.example/authorize")
        }
        var valid = try? configuration(token: "https://idp.example/token")
        valid?.revocationEndpoint = URL(string: "http://idp.example/revoke")
        #expect(throws: OAuth2Error.self) { try valid?.validate() }
    }

    @Test func defaultsAreBasicAuthASixtySecondSkewAndNoPasswordGrant() throws {
        let configuration = try configuration(token: "https://idp.example/token")
        #expect(configuration.clientAuthentication == .clientSecretBasic)
        #expect(configuration.expirySkew == .seconds(60))
        #expect(configuration.allowsPasswordGrant == false)
        #expect(configuration.maxResponseSize == 1 << 20)
    }

    @Test func withoutASecretTheClientIsPublic() throws {
        let configuration = try configuration(token: "https://idp.example/token", secret: nil)
        #expect(configuration.clientAuthentication == .none)
    }

    @Test func aSecretMethodWithoutASecretIsRefused() {
        do {
            _ = try OAuth2Configuration(
                clientID: "id",
                tokenEndpoint: URL(string: "https://idp.example/token")!,
                clientAuthentication: .clientSecretBasic
            )
            Issue.record("expected invalid_configuration")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }

    @Test func requiringTheIssuerInRedirectsWithoutAnIssuerIsRefused() throws {
        // Without an issuer to compare with, a required `iss` would accept any value (RFC 9207 §2.4).
        do {
            _ = try OAuth2Configuration(
                clientID: "id",
                tokenEndpoint: URL(string: "https://idp.example/token")!,
                requiresIssuerInRedirect: true
            )
            Issue.record("expected invalid_configuration")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("issuer"))
        }
        var configuration = try OAuth2Configuration(
            clientID: "id",
            tokenEndpoint: URL(string: "https://idp.example/token")!,
            issuer: "https://idp.example",
            requiresIssuerInRedirect: true
        )
        configuration.issuer = nil
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
        #expect(throws: OAuth2Error.self) { try OAuth2Provider(configuration: configuration, transport: NeverTransport()) }
    }

    @Test func neverPushingIsRefusedWhenTheProviderRequiresPushedRequests() throws {
        var configuration = try configuration(token: "https://idp.example/token")
        configuration.pushedAuthorizationRequestEndpoint = URL(string: "https://idp.example/par")
        configuration.requiresPushedAuthorizationRequests = true
        try configuration.validate()
        configuration.pushedAuthorization = .never
        do {
            try configuration.validate()
            Issue.record("expected invalid_configuration")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("RFC 9126 §5"))
            #expect(error.message.contains("require_pushed_authorization_requests"))
        }
        #expect(throws: OAuth2Error.self) { try OAuth2Provider(configuration: configuration, transport: NeverTransport()) }
        configuration.requiresPushedAuthorizationRequests = false
        try configuration.validate()
    }

    @Test func pushingAlwaysNeedsAnEndpointAndAnHTTPSOne() throws {
        var configuration = try configuration(token: "https://idp.example/token", authorize: "https://idp.example/authorize")
        configuration.pushedAuthorization = .always
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
        configuration.pushedAuthorizationRequestEndpoint = URL(string: "http://idp.example/par")
        do {
            try configuration.validate()
            Issue.record("expected insecure_endpoint")
        } catch {
            #expect(error.code == .insecureEndpoint)
        }
        configuration.pushedAuthorizationRequestEndpoint = URL(string: "https://idp.example/par")
        try configuration.validate()
    }

    @Test func signingRequestObjectsNeedsTheAssertionKey() throws {
        var configuration = try configuration(token: "https://idp.example/token")
        configuration.signsRequestObject = true
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
    }

    @Test func discoveryKeepsThePushedAndSignedRequestMetadata() throws {
        let metadata = AuthorizationServerMetadata(
            issuer: "https://idp.example", authorizationEndpoint: URL(string: "https://idp.example/authorize"),
            tokenEndpoint: URL(string: "https://idp.example/token"),
            pushedAuthorizationRequestEndpoint: URL(string: "https://idp.example/par"), requirePushedAuthorizationRequests: true,
            requestObjectSigningAlgValuesSupported: ["ES256"], requireSignedRequestObject: true)
        let configuration = try OAuth2Configuration(metadata: metadata, clientID: "id")
        #expect(configuration.pushedAuthorizationRequestEndpoint == URL(string: "https://idp.example/par"))
        #expect(configuration.requiresPushedAuthorizationRequests)
        #expect(configuration.pushedAuthorization == .automatic)
        #expect(configuration.requiresSignedRequestObject)
        #expect(configuration.requestObjectSigningAlgValuesSupported == ["ES256"])
    }

    @Test func aBearerConfigurationMakesNoDPoPKey() throws {
        #expect(try configuration(token: "https://idp.example/token").newDPoPKey() == nil)
    }

    /// The key of a new grant is made for an algorithm the provider's metadata lists.
    @Test func aNewDPoPKeyIsMadeForAnAlgorithmTheProviderLists() throws {
        let metadata = AuthorizationServerMetadata(
            issuer: "https://idp.example", tokenEndpoint: URL(string: "https://idp.example/token"),
            dpopSigningAlgValuesSupported: ["EdDSA", "RS256"])
        var configuration = try OAuth2Configuration(metadata: metadata, clientID: "id")
        #expect(configuration.dpopSigningAlgValuesSupported == [.edDSA, .rs256])
        configuration.dpop = DPoPSettings()
        #expect(try configuration.newDPoPKey()?.algorithm == .edDSA)
        configuration.dpop = DPoPSettings(algorithm: .es256)
        #expect(try configuration.newDPoPKey()?.algorithm == .edDSA)
        configuration.dpopSigningAlgValuesSupported = []
        #expect(try configuration.newDPoPKey()?.algorithm == .es256)
        configuration.dpopSigningAlgValuesSupported = ["ES512"]
        #expect(throws: OAuth2Error.self) { try configuration.newDPoPKey() }
    }

    @Test func aDPoPAlgorithmNoKeyCanBeMadeForIsRefused() throws {
        var configuration = try configuration(token: "https://idp.example/token")
        configuration.dpop = DPoPSettings(algorithm: .hs256)
        #expect(throws: OAuth2Error.self) { try configuration.validate() }
        #expect(throws: OAuth2Error.self) { try OAuth2Provider(configuration: configuration, transport: NeverTransport()) }
        configuration.dpop = DPoPSettings(algorithm: .edDSA)
        try configuration.validate()
    }

    @Test func aProviderRefusesAConfigurationMadeInsecureAfterItsCreation() throws {
        var configuration = try configuration(token: "https://idp.example/token")
        configuration.tokenEndpoint = URL(string: "http://idp.example/token")!
        do {
            _ = try OAuth2Provider(configuration: configuration, transport: NeverTransport())
            Issue.record("expected insecure_endpoint")
        } catch {
            #expect(error.code == .insecureEndpoint)
        }
    }
}

/// A transport for tests that must not reach the network at all.
private struct NeverTransport: HTTPTransport {
    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        Issue.record("no request was expected")
        throw HTTPTransportError.other("no request was expected")
    }
}
