import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite struct TLS {
        @Test func selfSignedServerIsRefusedWithoutItsCA() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.secureURL("/echo/secret"))
            await #expect(throws: HTTPTransportError.tlsFailed) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test(arguments: ["127.0.0.1", "localhost"])
        func serverIsTrustedWithItsCAFile(host: String) async throws {
            let server = try currentServer()
            let configuration = CurlTransport.Configuration(caFile: server.caFile)
            let request = HTTPTransportRequest(url: try server.secureURL("/echo/secure", host: host))
            let response = try await withTransport(configuration) { transport in
                try await transport.send(request)
            }
            #expect(response.status == 200)
            #expect(response.bodyText == "secure")
        }

        @Test(arguments: ["127.0.0.1", "localhost"])
        func aCertificateOfTheTrustedCAForAnotherNameIsRefused(host: String) async throws {
            let server = try currentServer()
            let configuration = CurlTransport.Configuration(caFile: server.caFile)
            let request = HTTPTransportRequest(url: try server.misnamedURL("/echo/secret", host: host))
            await #expect(throws: HTTPTransportError.tlsFailed) {
                try await withTransport(configuration) { transport in try await transport.send(request) }
            }
        }

        @Test func aTokenEndpointWithACertificateForAnotherNameIsATLSError() async throws {
            let server = try currentServer()
            let configuration = try OAuth2Configuration(
                clientID: "client", clientSecret: Secret("client-secret"), tokenEndpoint: server.misnamedURL("/token"))
            let error = try await withTransport(CurlTransport.Configuration(caFile: server.caFile)) { transport in
                let provider = try OAuth2Provider(configuration: configuration, transport: transport)
                do {
                    _ = try await provider.token(for: .clientCredentials)
                    return nil as OAuth2Error?
                } catch let error as OAuth2Error {
                    return error
                }
            }
            #expect(error?.code == .tlsError)
            #expect(error?.message.contains("client-secret") == false)
        }

        @Test func missingCAFileIsATLSFailure() async throws {
            let server = try currentServer()
            let configuration = CurlTransport.Configuration(caFile: "/nonexistent/ca.pem")
            let request = HTTPTransportRequest(url: try server.secureURL("/echo/x"))
            await #expect(throws: HTTPTransportError.tlsFailed) {
                try await withTransport(configuration) { transport in try await transport.send(request) }
            }
        }
    }
}
