import Foundation
import MutualTLSFixture
import OAuth2
import Testing

/// CurlTransport presenting client certificates (mutual TLS, RFC 8705) to
/// nginx, which says which certificate it saw on each request's connection.
@Suite(.mutualTLSServer)
struct ClientCertificateTests {
    private func send(
        _ certificate: ClientCertificate?, via transport: CurlTransport, server: MutualTLSServer
    ) async throws -> MutualTLSServer.Seen {
        var request = HTTPTransportRequest(url: try server.url("/seen"))
        request.clientCertificate = certificate
        let response = try await transport.send(request)
        #expect(response.status == 200)
        return try JSONDecoder().decode(MutualTLSServer.Seen.self, from: response.body)
    }

    private func certificate(_ client: MutualTLSServer.Client) throws -> ClientCertificate {
        try ClientCertificate(certificateFile: client.certificateFile, keyFile: client.keyFile)
    }

    @Test func theServerSeesTheCertificateFromTheFiles() async throws {
        let server = try currentMutualTLSServer()
        let issued = try certificate(server.issued)
        let seen = try await withTransport(CurlTransport.Configuration(caFile: server.caFile)) { transport in
            try await send(issued, via: transport, server: server)
        }
        #expect(seen.fingerprint == server.issued.sha1)
        #expect(seen.verify != "NONE")
    }

    @Test func theThumbprintIsOpenSSLsSHA256OfTheCertificate() throws {
        let server = try currentMutualTLSServer()
        #expect(try certificate(server.issued).thumbprint == server.issued.sha256)
        #expect(try certificate(server.selfSigned).thumbprint == server.selfSigned.sha256)
    }

    @Test func aRequestWithoutACertificatePresentsNone() async throws {
        let server = try currentMutualTLSServer()
        let seen = try await withTransport(CurlTransport.Configuration(caFile: server.caFile)) { transport in
            try await send(nil, via: transport, server: server)
        }
        #expect(seen.verify == "NONE")
        #expect(seen.fingerprint.isEmpty)
    }

    /// One transport, one host, requests taking turns with no certificate, one and another:
    /// each is answered on a connection that presented its own (or none), and
    /// the connections of each are kept and reused for it alone.
    @Test func connectionsAreReusedOnlyForTheSameCertificate() async throws {
        let server = try currentMutualTLSServer()
        let issued = try certificate(server.issued)
        let selfSigned = try certificate(server.selfSigned)
        let turns: [ClientCertificate?] = Array(repeating: [nil, issued, selfSigned, issued, nil], count: 4).flatMap { $0 }
        let seen = try await withTransport(CurlTransport.Configuration(caFile: server.caFile)) { transport in
            var seen: [MutualTLSServer.Seen] = []
            for certificate in turns {
                seen.append(try await send(certificate, via: transport, server: server))
            }
            return seen
        }
        var connections: [String: Set<String>] = [:]
        for (certificate, answer) in zip(turns, seen) {
            let expected = certificate == nil ? "" : certificate == issued ? server.issued.sha1 : server.selfSigned.sha1
            #expect(answer.fingerprint == expected)
            connections[expected, default: []].insert(answer.connection)
        }
        // Reused: one connection each, not one per request.
        #expect(connections.values.allSatisfy { $0.count == 1 })
        // And never shared between certificates (or none).
        #expect(Set(connections.values.flatMap { $0 }).count == 3)
    }

    /// The same, concurrently: HTTP/2 multiplexes many requests onto one
    /// connection, and must not put a request onto another certificate's.
    @Test func concurrentRequestsAreNeverMultiplexedOntoAnotherCertificatesConnection() async throws {
        let server = try currentMutualTLSServer()
        let issued = try certificate(server.issued)
        let selfSigned = try certificate(server.selfSigned)
        let expected: [String?: String] = [nil: "", issued.thumbprint: server.issued.sha1, selfSigned.thumbprint: server.selfSigned.sha1]
        let mismatches = try await withTransport(CurlTransport.Configuration(caFile: server.caFile)) { transport in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<60 {
                    let certificate: ClientCertificate? = [nil, issued, selfSigned][index % 3]
                    group.addTask {
                        let seen = try await send(certificate, via: transport, server: server)
                        return seen.fingerprint == expected[certificate?.thumbprint] ? 0 : 1
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        #expect(mismatches == 0)
    }

    /// A new connection made without a certificate must not resume a TLS
    /// session that presented one: the server would take the session's
    /// certificate for this connection's.
    @Test func aSessionMadeWithACertificateIsNotResumedWithoutIt() async throws {
        let server = try currentMutualTLSServer()
        let issued = try certificate(server.issued)
        // One connection at most, so each turn closes the other's connection and makes a new one.
        let configuration = CurlTransport.Configuration(maxConnections: 1, caFile: server.caFile, maxThreads: 1)
        let seen = try await withTransport(configuration) { transport in
            var seen: [(ClientCertificate?, MutualTLSServer.Seen)] = []
            for certificate in [issued, nil, issued, nil, issued, nil] as [ClientCertificate?] {
                seen.append((certificate, try await send(certificate, via: transport, server: server)))
            }
            return seen
        }
        for (certificate, answer) in seen {
            #expect(answer.fingerprint == (certificate == nil ? "" : server.issued.sha1))
        }
    }

    /// Hands out one token bound to `boundTo`, and presents `presents`.
    struct BoundTokenSource: TokenSource {
        let token: AccessToken
        let clientCertificate: ClientCertificate?

        init(boundTo: ClientCertificate, presents: ClientCertificate?) {
            var token = AccessToken(accessToken: Secret("at-bound-to-a-certificate-000001"))
            token.certificateThumbprint = boundTo.thumbprint
            self.token = token
            clientCertificate = presents
        }

        func token() async throws -> AccessToken { token }
        func token(replacing rejected: AccessToken) async throws -> AccessToken { token }
    }

    @Test func aBoundTokenGoesToTheServerWithItsCertificate() async throws {
        let server = try currentMutualTLSServer()
        let issued = try certificate(server.issued)
        let path = "/bound-\(UUID().uuidString)"
        let seen = try await withTransport(CurlTransport.Configuration(caFile: server.caFile)) { transport in
            let signing = SigningTransport(wrapping: transport, tokenSource: BoundTokenSource(boundTo: issued, presents: issued))
            let response = try await signing.send(HTTPTransportRequest(url: try server.url(path)))
            return try JSONDecoder().decode(MutualTLSServer.Seen.self, from: response.body)
        }
        #expect(seen.fingerprint == server.issued.sha1)
        #expect(server.accessLogLines(path: path).count == 1)
    }

    @Test(arguments: [false, true])
    func aBoundTokenNeverReachesTheServerWithAnotherCertificateOrNone(presentsAnother: Bool) async throws {
        let server = try currentMutualTLSServer()
        let issued = try certificate(server.issued)
        let selfSigned = try certificate(server.selfSigned)
        let path = "/bound-\(UUID().uuidString)"
        let url = try server.url(path)
        let error = try await withTransport(CurlTransport.Configuration(caFile: server.caFile)) { transport in
            let source = BoundTokenSource(boundTo: issued, presents: presentsAnother ? selfSigned : nil)
            do throws(OAuth2Error) {
                _ = try await SigningTransport(wrapping: transport, tokenSource: source).send(HTTPTransportRequest(url: url))
                return nil as OAuth2Error?
            } catch {
                return error
            }
        }
        #expect(error?.code == .certificateMismatch)
        #expect(server.accessLogLines(path: path).isEmpty)
    }
}
