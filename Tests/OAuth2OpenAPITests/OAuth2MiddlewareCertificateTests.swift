import Foundation
import HTTPTypes
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

    /// A throw-away self-signed P-256 certificate and key (`openssl req -x509 -newkey ec`).
    static var certificate: ClientCertificate {
        get throws { try makeCertificate() }
    }

    private static func makeCertificate() throws -> ClientCertificate {
        try ClientCertificate(
            certificatePEM: """
                -----BEGIN CERTIFICATE-----
                MIIBnTCCAUOgAwIBAgIUGGaio9GM8ZGqHyMztJgJomUlDyQwCgYIKoZIzj0EAwIw
                IzEhMB8GA1UEAwwYc3dpZnQtb2F1dGgyLXRlc3QtY2xpZW50MCAXDTI2MTEyODE1
                MDEwMVoYDzIxMjYxMTA0MTUwMTAxWjAjMSEwHwYDVQQDDBhzd2lmdC1vYXV0aDIt
                dGVzdC1jbGllbnQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQXfRE+smXqpDRo
                eaJGSptHsR/8SM4hfNQ2wqRcQNQDlUnDIgaJ996/5AoUzDnCNDMxS/zKpL1xHQnE
                Cx4gh6Q2o1MwUTAdBgNVHQ4EFgQUpFRGWyf5SywyiBXVx5HHhPu6tw0wHwYDVR0j
                BBgwFoAUpFRGWyf5SywyiBXVx5HHhPu6tw0wDwYDVR0TAQH/BAUwAwEB/zAKBggq
                hkjOPQQDAgNIADBFAiEAqIQMc0v8uCs5S8hykQKWVufsHEMkQA/Jb060oXLzta4C
                ICt6D0zGCPpYgJd3rvXjlTARnB0+NQVMA10qA/Q3q6Cj
                -----END CERTIFICATE-----
                """,
            privateKeyPEM: Secret(
                """
                -----BEGIN PRIVATE KEY-----
                MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg7S/PMxZJj6roNAU8
                hlSE1uAbMYPgMkDgCJbcY3MatAGhRANCAAQXfRE+smXqpDRoeaJGSptHsR/8SM4h
                fNQ2wqRcQNQDlUnDIgaJ996/5AoUzDnCNDMxS/zKpL1xHQnECx4gh6Q2
                -----END PRIVATE KEY-----
                """)
        )
    }

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
        let certificate = try Self.certificate
        let source = BoundSource(boundTo: certificate.thumbprint, clientCertificate: certificate)

        _ = try await client(source).getMe().ok.body.json

        #expect(canned.requests.map(\.clientCertificate) == [certificate])
        #expect(canned.requests.first?.headers[.authorization] == "Bearer at-bound-0000000000000001")
    }

    @Test func aTokenBoundToAnotherCertificateIsNeverSent() async throws {
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)
        let source = BoundSource(boundTo: "another-certificate-thumbprint", clientCertificate: try Self.certificate)

        let error = await #expect(throws: ClientError.self) { _ = try await client(source).getMe() }

        #expect(((error?.underlyingError) as? OAuth2Error)?.code == .certificateMismatch)
        #expect(canned.requests.isEmpty)
    }
}
