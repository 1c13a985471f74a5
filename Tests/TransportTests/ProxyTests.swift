import Foundation
import OAuth2
import Testing

@Suite struct ProxyTests {
    /// Runs in a child process: setting a proxy variable there cannot race
    /// the other tests' libcurl reading the environment.
    @Test func loopbackRequestsIgnoreProxyEnvironmentVariables() async {
        await #expect(processExitsWith: .success) {
            let server = try TestServer.start()
            defer { server.stop() }
            // Port 9 (discard) on loopback: nothing listens, so a request sent
            // through this proxy fails to connect.
            setenv("http_proxy", "http://127.0.0.1:9", 1)
            setenv("HTTP_PROXY", "http://127.0.0.1:9", 1)
            setenv("all_proxy", "http://127.0.0.1:9", 1)
            let transport = CurlTransport()
            let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/through-no-proxy")))
            await transport.shutdown()
            guard response.status == 200, response.bodyText == "through-no-proxy" else { exit(1) }
        }
    }
}
