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

extension CurlTransportTests {
    /// What a followed redirect takes along, hop by hop (RedirectStep's rules).
    @Suite struct RedirectHops {
        /// `url`'s text as a query value.
        private func escaped(_ url: URL) -> String {
            url.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        }

        private func secureConfiguration() throws -> CurlTransport.Configuration {
            CurlTransport.Configuration(caFile: try currentServer().caFile)
        }

        // libcurl followed https to http (its redirect protocols were http and https).
        @Test func aRedirectFromHTTPSToHTTPIsRefused() async throws {
            let server = try currentServer()
            let plain = try server.url("/echo/plain")
            let request = HTTPTransportRequest(url: try server.secureURL("/redirect?to=\(escaped(plain))"), redirects: .follow)
            let error = await #expect(throws: HTTPTransportError.unsupportedURL) {
                try await withTransport(try secureConfiguration()) { transport in try await transport.send(request) }
            }
            #expect(error?.message.contains("from https to http") == true)
        }

        @Test func aRedirectFromHTTPSToHTTPIsRefusedOnALaterHop() async throws {
            let server = try currentServer()
            let plain = try server.url("/echo/plain")
            let secure = try server.secureURL("/redirect?to=\(escaped(plain))")
            let request = HTTPTransportRequest(url: try server.url("/redirect?to=\(escaped(secure))"), redirects: .follow)
            await #expect(throws: HTTPTransportError.unsupportedURL) {
                try await withTransport(try secureConfiguration()) { transport in try await transport.send(request) }
            }
        }

        private func fieldNames(_ response: HTTPTransportResponse) throws -> Set<String> {
            let fields = try JSONDecoder().decode([[String]].self, from: response.body)
            return Set(fields.compactMap { $0.first?.lowercased() })
        }

        private let credentialed: HTTPFields = [
            .authorization: "Basic dXNlcjpwYXNz", .cookie: "session=s3cret", HTTPField.Name("X-Api-Key")!: "k3y",
            .accept: "application/json", .userAgent: "tests/1",
        ]

        // libcurl 7.88 kept Authorization and Cookie from another host, but
        // sent every other field of the caller's (an API key) along.
        @Test func theRequestsFieldsGoOnlyToItsOwnOrigin() async throws {
            let server = try currentServer()
            let elsewhere = try #require(URL(string: "http://localhost:\(server.httpPort)/headers"))
            let request = HTTPTransportRequest(
                url: try server.url("/redirect?to=\(escaped(elsewhere))"), headers: credentialed, redirects: .follow)
            let response = try await withTransport { transport in try await transport.send(request) }
            #expect(response.status == 200)
            #expect(response.url == elsewhere)
            let names = try fieldNames(response)
            #expect(names.isDisjoint(with: ["authorization", "cookie", "x-api-key"]), "\(names)")
            #expect(names.isSuperset(of: ["accept", "user-agent"]), "\(names)")
        }

        @Test func theRequestsFieldsAllGoAlongOnItsOwnOrigin() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.url("/redirect?to=/headers"), headers: credentialed, redirects: .follow)
            let response = try await withTransport { transport in try await transport.send(request) }
            #expect(try fieldNames(response).isSuperset(of: ["authorization", "cookie", "x-api-key", "accept", "user-agent"]))
        }

        // A DPoP proof names one method and URL (RFC 9449 §4.2): it went to
        // the redirect's URL too, with the caller's other fields.
        @Test func aDPoPProofIsNotTakenToAnotherURLEvenOnItsOwnOrigin() async throws {
            let server = try currentServer()
            var headers = credentialed
            headers.append(HTTPField(name: HTTPField.Name("DPoP")!, value: "eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.c2ln"))
            let request = HTTPTransportRequest(url: try server.url("/redirect?to=/headers"), headers: headers, redirects: .follow)
            let response = try await withTransport { transport in try await transport.send(request) }
            let names = try fieldNames(response)
            #expect(!names.contains("dpop"), "\(names)")
            #expect(names.isSuperset(of: ["authorization", "cookie", "x-api-key"]), "\(names)")
        }

        // libcurl sent a 307's or 308's body to wherever it pointed.
        @Test(arguments: [307, 308])
        func aBodyIsNotTakenToAnotherOriginAndTheRedirectIsReturned(status: Int) async throws {
            let server = try currentServer()
            let elsewhere = try #require(URL(string: "http://localhost:\(server.httpPort)/echo-body"))
            let request = HTTPTransportRequest(
                method: .post, url: try server.url("/redirect?status=\(status)&to=\(escaped(elsewhere))"),
                body: Data("secret=1".utf8), redirects: .follow)
            let response = try await withTransport { transport in try await transport.send(request) }
            #expect(response.status.code == status)
            #expect(response.headers[.location] == elsewhere.absoluteString)
        }

        @Test(arguments: [307, 308])
        func aBodyAndItsMethodGoAlongOnItsOwnOrigin(status: Int) async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(
                method: .put, url: try server.url("/redirect?status=\(status)&to=/echo-body"), body: Data("payload".utf8),
                redirects: .follow)
            let response = try await withTransport { transport in try await transport.send(request) }
            #expect(response.status == 200)
            #expect(response.headers[HTTPField.Name("X-Method")!] == "PUT")
            #expect(response.bodyText == "payload")
        }

        // libcurl keeps a custom method (PUT, PATCH, DELETE) across a 303.
        @Test(arguments: [HTTPRequest.Method.put, .patch, .delete, .post])
        func a303BecomesAGetWithoutABody(method: HTTPRequest.Method) async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(
                method: method, url: try server.url("/redirect?status=303&to=/echo-body"),
                headers: [.contentType: "text/plain"], body: Data("payload".utf8), redirects: .follow)
            let response = try await withTransport { transport in try await transport.send(request) }
            #expect(response.status == 200)
            #expect(response.headers[HTTPField.Name("X-Method")!] == "GET")
            #expect(response.body.isEmpty)
        }
    }
}
