import Foundation
import MutualTLSFixture
import OAuth2
import OAuth2Testing
import Testing

/// Certificate-bound tokens (RFC 8705 §3) through ``SigningTransport``: the
/// token goes only with the certificate it was obtained with.
@Suite struct SigningTransportCertificateTests {
    /// Hands out one token; presents `certificate` unless the request names one.
    struct CertificateTokenSource: TokenSource {
        let bound: AccessToken
        let clientCertificate: ClientCertificate?

        func token() async throws -> AccessToken { bound }
        func token(replacing rejected: AccessToken) async throws -> AccessToken { bound }
    }

    private let api = URL(string: "https://api.example/v1/me")!

    private func token(boundTo certificate: ClientCertificate?) -> AccessToken {
        var token = AccessToken(accessToken: Secret("at-bound-0000000000000001"))
        token.certificateThumbprint = certificate?.thumbprint
        return token
    }

    @Test func aBoundTokenGoesWithTheSourcesCertificate() async throws {
        let first = try ClientCertificateFixtures.first
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = CertificateTokenSource(bound: token(boundTo: first), clientCertificate: first)

        _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: api))

        #expect(inner.requests.map(\.clientCertificate) == [first])
        #expect(inner.requests.first?.headers[.authorization] == "Bearer at-bound-0000000000000001")
    }

    @Test func aBoundTokenIsNotSentWithAnotherCertificate() async throws {
        let first = try ClientCertificateFixtures.first
        let second = try ClientCertificateFixtures.second
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = CertificateTokenSource(bound: token(boundTo: first), clientCertificate: second)

        let error = await oauth2Error {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: api))
        }

        #expect(error?.code == .certificateMismatch)
        #expect(error?.message.contains(ClientCertificateFixtures.firstThumbprint) == true)
        #expect(error?.message.contains("at-bound") == false)
        #expect(inner.requests.isEmpty)
    }

    @Test func aBoundTokenIsNotSentWithoutACertificate() async throws {
        let first = try ClientCertificateFixtures.first
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = CertificateTokenSource(bound: token(boundTo: first), clientCertificate: nil)

        let error = await oauth2Error {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: api))
        }

        #expect(error?.code == .certificateMismatch)
        #expect(inner.requests.isEmpty)
    }

    @Test func theRequestsOwnCertificateIsTheOneChecked() async throws {
        let first = try ClientCertificateFixtures.first
        let second = try ClientCertificateFixtures.second
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = CertificateTokenSource(bound: token(boundTo: first), clientCertificate: first)
        var request = HTTPTransportRequest(url: api)
        request.clientCertificate = second

        let error = await oauth2Error { _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(request) }

        #expect(error?.code == .certificateMismatch)
        #expect(inner.requests.isEmpty)
    }

    @Test func aBoundTokenIsNotSentOverPlainHTTPEvenToLoopback() async throws {
        let first = try ClientCertificateFixtures.first
        let loopback = URL(string: "http://127.0.0.1:8080/me")!
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: loopback)
        let source = CertificateTokenSource(bound: token(boundTo: first), clientCertificate: first)

        let error = await oauth2Error {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: loopback))
        }

        #expect(error?.code == .certificateMismatch)
        #expect(inner.requests.isEmpty)
    }

    @Test func anUnboundTokenGoesWithOrWithoutACertificate() async throws {
        let first = try ClientCertificateFixtures.first
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)

        _ = try await SigningTransport(
            wrapping: inner, tokenSource: CertificateTokenSource(bound: token(boundTo: nil), clientCertificate: first)
        ).send(HTTPTransportRequest(url: api))
        _ = try await SigningTransport(
            wrapping: inner, tokenSource: CertificateTokenSource(bound: token(boundTo: nil), clientCertificate: nil)
        ).send(HTTPTransportRequest(url: api))

        #expect(inner.requests.map(\.clientCertificate) == [first, nil])
    }
}
