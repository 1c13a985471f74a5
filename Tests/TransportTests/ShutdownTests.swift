import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite(.timeLimit(.minutes(1))) struct Shutdown {
        @Test func shutdownFailsEveryRequestInFlight() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let request = taggedRequest(try server.url("/hang"), tag: tag)
            // Four connections: the other requests wait inside the transport for one.
            let transport = CurlTransport(configuration: .init(maxConnectionsPerHost: 4))
            let tasks = (0..<20).map { _ in Task { try await transport.send(request) } }
            try await server.waitForRequests(tag: tag, count: 4)

            await transport.shutdown()
            for task in tasks {
                await #expect(throws: HTTPTransportError.shutDown) { try await task.value }
            }
        }

        @Test func sendAfterShutdownFails() async throws {
            let server = try currentServer()
            let transport = CurlTransport()
            await transport.shutdown()
            await #expect(throws: HTTPTransportError.shutDown) {
                try await transport.send(HTTPTransportRequest(url: try server.url("/echo/late")))
            }
        }

        @Test func shutdownIsIdempotent() async throws {
            let server = try currentServer()
            let transport = CurlTransport()
            let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/once")))
            #expect(response.bodyText == "once")
            await transport.shutdown()
            await transport.shutdown()
            await #expect(throws: HTTPTransportError.shutDown) {
                try await transport.send(HTTPTransportRequest(url: try server.url("/echo/twice")))
            }
        }
    }
}
