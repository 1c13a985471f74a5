import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

@Suite struct AuthorizationServerMetadataDiscoveryTests {
    @Test func fetchGetsTheWellKnownDocumentOfTheIssuerAndChecksIt() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json: """
                {"issuer": "https://id.example/tenant", "token_endpoint": "https://id.example/tenant/token",
                 "authorization_response_iss_parameter_supported": true}
                """)
        let metadata = try await AuthorizationServerMetadata.fetch(issuer: "https://id.example/tenant", transport: transport)
        #expect(metadata.tokenEndpoint == URL(string: "https://id.example/tenant/token"))
        #expect(metadata.authorizationResponseIssParameterSupported)
        let request = try #require(transport.requests.first)
        #expect(request.method == .get)
        #expect(request.url.absoluteString == "https://id.example/.well-known/oauth-authorization-server/tenant")
        #expect(request.redirects == .never)
    }

    @Test func fetchRefusesMetadataNamingAnotherIssuer() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"issuer": "https://evil.example"}"#)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.fetch(issuer: "https://id.example", transport: transport)
        }
        #expect(error?.code == .issuerMismatch)
    }

    @Test func fetchTurnsATransportTimeoutIntoTheTimeoutCode() async throws {
        let transport = CannedTransport()
        transport.enqueue(error: HTTPTransportError.timeout)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.fetch(issuer: "https://id.example", transport: transport)
        }
        #expect(error?.code == .timeout)
    }
}
