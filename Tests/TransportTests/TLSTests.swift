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
