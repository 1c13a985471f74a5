import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// From a user identifier to a configuration: WebFinger, then the issuer's
/// OpenID Connect configuration (OpenID Connect Discovery 1.0 §2, §4).
@Suite struct OAuth2ConfigurationWebFingerTests {
    static let webFinger = URL(string: "https://example.com/.well-known/webfinger")!
    static let configuration = URL(string: "https://id.example/tenant/.well-known/openid-configuration")!

    static func link(_ issuer: String) -> String {
        #"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "\#(issuer)"}]}"#
    }

    static func document(issuer: String, tokenEndpoint: String = "https://id.example/tenant/token") -> String {
        #"{"issuer": "\#(issuer)", "authorization_endpoint": "https://id.example/tenant/authorize", "token_endpoint": "\#(tokenEndpoint)", "jwks_uri": "https://id.example/tenant/jwks"}"#
    }

    @Test func theIssuerFoundByWebFingerIsDiscovered() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.link("https://id.example/tenant"), for: Self.webFinger)
        transport.enqueue(json: Self.document(issuer: "https://id.example/tenant"), for: Self.configuration)
        let configuration = try await OAuth2Configuration.discover(webFinger: "joe@example.com", clientID: "app", transport: transport)
        #expect(configuration.issuer == "https://id.example/tenant")
        #expect(configuration.tokenEndpoint.absoluteString == "https://id.example/tenant/token")
        #expect(configuration.openID != nil)
        #expect(transport.requests.map(\.url.path) == ["/.well-known/webfinger", "/tenant/.well-known/openid-configuration"])
    }

    /// Discovery §4.3: the configuration must name exactly the issuer WebFinger gave.
    @Test func aConfigurationNamingAnotherIssuerIsRefused() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.link("https://id.example/tenant"), for: Self.webFinger)
        transport.enqueue(json: Self.document(issuer: "https://id.example/tenant/"), for: Self.configuration)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await OAuth2Configuration.discover(webFinger: "joe@example.com", clientID: "app", transport: transport)
        }
        #expect(error?.code == .issuerMismatch)
    }

    /// The SSRF rule of resource discovery: a public issuer may not send the
    /// client's requests to an internal address.
    @Test func aPublicIssuerNamingAnInternalEndpointIsRefused() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.link("https://id.example/tenant"), for: Self.webFinger)
        transport.enqueue(
            json: Self.document(issuer: "https://id.example/tenant", tokenEndpoint: "https://10.0.0.5/token"), for: Self.configuration)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await OAuth2Configuration.discover(webFinger: "joe@example.com", clientID: "app", transport: transport)
        }
        #expect(error?.code == .insecureEndpoint)
    }
}
