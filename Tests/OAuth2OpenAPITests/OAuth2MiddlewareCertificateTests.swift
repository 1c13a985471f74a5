import Foundation
import HTTPTypes
import MutualTLSFixture
import OAuth2
import OAuth2OpenAPI
import OAuth2Testing
import OpenAPIRuntime
import Testing

/// ``OAuth2Middleware`` with a certificate-bound token (RFC 8705 §3): the
/// certificate reaches the transport at the end of the chain, and a token
/// bound to another one is never sent.
struct OAuth2MiddlewareCertificateTests {
    let server = URL(string: "https://api.example/v1")!
    let canned = CannedTransport()

    struct BoundSource: TokenSource {
        let boundTo: String
        let clientCertificate: ClientCertificate?

        func token() async throws -> AccessToken {
            var token = AccessToken(accessToken: Secret("at-bound-0000000000000001"))
            token.certificateThumbprint = boundTo
            return token
        }

        func token(replacing rejected: AccessToken) async throws -> AccessToken { try await token() }
    }

    private func client(_ source: any TokenSource) -> Client {
        Client(
            serverURL: server, transport: HTTPTransportClientTransport(canned),
            middlewares: [OAuth2Middleware(tokenSource: source, serverURL: server)])
    }

    @Test func theTransportPresentsTheCertificateTheTokenIsBoundTo() async throws {
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)
        let certificate = try ClientCertificateFixtures.first
        let source = BoundSource(boundTo: certificate.thumbprint, clientCertificate: certificate)

        _ = try await client(source).getMe().ok.body.json

        #expect(canned.requests.map(\.clientCertificate) == [certificate])
        #expect(canned.requests.first?.headers[.authorization] == "Bearer at-bound-0000000000000001")
    }

    @Test func aTokenBoundToAnotherCertificateIsNeverSent() async throws {
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)
        let source = BoundSource(boundTo: "another-certificate-thumbprint", clientCertificate: try ClientCertificateFixtures.first)

        let error = await #expect(throws: ClientError.self) { _ = try await client(source).getMe() }

        #expect(((error?.underlyingError) as? OAuth2Error)?.code == .certificateMismatch)
        #expect(canned.requests.isEmpty)
    }
}
