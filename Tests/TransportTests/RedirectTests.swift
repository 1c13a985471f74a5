import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite struct Redirects {
        @Test func redirectIsReturnedNotFollowedByDefault() async throws {
            let server = try currentServer()
            let url = try server.url("/redirect?to=/echo/target")
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(url: url))
            }
            #expect(response.status == 302)
            #expect(response.headers[.location] == "/echo/target")
            #expect(response.url == url)
        }

        @Test func redirectIsFollowedWhenAsked() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.url("/redirect?to=/echo/target"), redirects: .follow)
            let response = try await withTransport { transport in
                try await transport.send(request)
            }
            #expect(response.status == 200)
            #expect(response.bodyText == "target")
            #expect(response.url == (try server.url("/echo/target")))
        }

        @Test func followedRedirectReportsOnlyTheFinalResponsesHeaders() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.url("/redirect?to=/headers"), redirects: .follow)
            let response = try await withTransport { transport in
                try await transport.send(request)
            }
            #expect(response.headers[HTTPField.Name("X-Single")!] == "one")
            #expect(!response.headers.contains(HTTPField.Name("X-Hop")!))
            #expect(!response.headers.contains(.location))
            #expect(response.headers[values: .contentLength].count == 1)
        }

        @Test func endlessRedirectsStopAtTheLimit() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.url("/loop"), redirects: .follow)
            await #expect(throws: HTTPTransportError.tooManyRedirects) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }
    }
}
