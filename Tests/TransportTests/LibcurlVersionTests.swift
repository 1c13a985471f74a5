import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    /// The options the transport sets for a libcurl older than 7.85 (no
    /// `CURLOPT_PROTOCOLS_STR`: every request failed there with libcurl
    /// error 48), set on this machine's libcurl, which still has them.
    @Suite struct LibcurlVersions {
        /// The loaded libcurl's own, Ubuntu 22.04's 7.81.0, and the oldest accepted, 7.68.0.
        static let versions: [UInt32?] = [nil, 0x07_51_00, 0x07_44_00]

        private func configuration(assuming version: UInt32?) -> CurlTransport.Configuration {
            var configuration = CurlTransport.Configuration()
            configuration.assumedLibcurlVersion = version
            return configuration
        }

        @Test(arguments: versions)
        func aRequestIsAnsweredWithTheOptionsOfTheVersion(version: UInt32?) async throws {
            let server = try currentServer()
            let response = try await withTransport(configuration(assuming: version)) { transport in
                try await transport.send(HTTPTransportRequest(url: try server.url("/echo/versions")))
            }
            #expect(response.status == 200)
            #expect(response.bodyText == "versions")
        }

        // The transport follows redirects itself, never libcurl, and refuses
        // this one before libcurl sees it; libcurl is held to http and https
        // as well, so that nothing else is reached should a URL get that far.
        @Test(arguments: versions)
        func aRedirectToAnotherProtocolIsRefusedWithTheOptionsOfTheVersion(version: UInt32?) async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(
                url: try server.url("/redirect?to=ftp://127.0.0.1:\(server.httpPort)/file"), timeout: .seconds(3), redirects: .follow)
            await #expect(throws: HTTPTransportError.unsupportedURL) {
                try await withTransport(configuration(assuming: version)) { transport in try await transport.send(request) }
            }
        }
    }
}
