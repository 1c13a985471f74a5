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

    /// Only loopback requests leave the environment's proxy aside: a request
    /// to any other host goes through it. The test server answers as the
    /// proxy (it routes an absolute-form request target by its path).
    @Test func otherRequestsGoThroughTheEnvironmentsProxy() async {
        await #expect(processExitsWith: .success) {
            let proxy = try TestServer.start()
            defer { proxy.stop() }
            let proxyURL = try proxy.url("/")
            unsetenv("no_proxy")
            unsetenv("NO_PROXY")
            setenv("http_proxy", proxyURL.absoluteString, 1)
            let transport = CurlTransport()
            // `.invalid` never resolves (RFC 6761): only the proxy can answer.
            let response = try await transport.send(HTTPTransportRequest(url: URL(string: "http://api.example.invalid/echo/via-proxy")!))
            await transport.shutdown()
            guard response.status == 200, response.bodyText == "via-proxy" else { exit(1) }
        }
    }
}
