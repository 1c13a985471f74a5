import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite struct Requests {
        @Test func postBodyArrivesIntact() async throws {
            let server = try currentServer()
            let body = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let response = try await withTransport { transport in
                try await transport.send(HTTPRequest(method: "POST", url: try server.url("/echo-body"), body: body))
            }
            #expect(response.status == 200)
            #expect(response.headers["X-Method"] == "POST")
            #expect(response.body == body)
        }

        @Test(arguments: ["PUT", "PATCH", "DELETE"])
        func otherMethodsSendTheirNameAndBody(method: String) async throws {
            let server = try currentServer()
            let body = Data("payload for \(method)".utf8)
            let response = try await withTransport { transport in
                try await transport.send(HTTPRequest(method: method, url: try server.url("/echo-body"), body: body))
            }
            #expect(response.headers["X-Method"] == method)
            #expect(response.body == body)
        }

        @Test func emptyPostSendsZeroLength() async throws {
            let server = try currentServer()
            let response = try await withTransport { transport in
                try await transport.send(HTTPRequest(method: "POST", url: try server.url("/echo-body")))
            }
            #expect(response.status == 200)
            #expect(response.headers["X-Method"] == "POST")
            #expect(response.body.isEmpty)
        }

        @Test func headRequestReturnsHeadersWithoutBody() async throws {
            let server = try currentServer()
            let response = try await withTransport { transport in
                try await transport.send(HTTPRequest(method: "HEAD", url: try server.url("/echo/hello")))
            }
            #expect(response.status == 200)
            #expect(response.headers["Content-Length"] == "5")
            #expect(response.body.isEmpty)
        }

        @Test func headRequestForALargeResourceIsNotRefused() async throws {
            let server = try currentServer()
            let request = HTTPRequest(method: "HEAD", url: try server.url("/big?size=\(64 << 20)"), maxResponseSize: 1000)
            let response = try await withTransport { transport in
                try await transport.send(request)
            }
            #expect(response.status == 200)
            #expect(response.headers["Content-Length"] == "\(64 << 20)")
        }

        @Test func responseStatusHeadersAndURLAreReported() async throws {
            let server = try currentServer()
            let url = try server.url("/headers")
            let response = try await withTransport { transport in
                try await transport.send(HTTPRequest(url: url))
            }
            #expect(response.status == 200)
            #expect(response.headers["x-single"] == "one")
            #expect(response.headers.values(for: "X-Multi") == ["a", "b"])
            #expect(response.headers["X-Padded"] == "padded value")
            #expect(response.headers["Content-Type"] == "application/json")
            #expect(response.headers["X-Folded"] == "first second")
            #expect(response.url == url)
        }

        @Test func requestIsSentAsBuilt() async throws {
            let server = try currentServer()
            let request = HTTPRequest(
                method: "POST",
                url: try server.url("/headers"),
                headers: ["X-Custom": "value: with colon", "X-Empty": ""],
                body: Data(repeating: 0x61, count: 2 << 20)
            )
            let response = try await withTransport { transport in
                try await transport.send(request)
            }
            let fields = try JSONDecoder().decode([[String]].self, from: response.body)
            let names = fields.compactMap { $0.first?.lowercased() }
            #expect(fields.contains(["X-Custom", "value: with colon"]))
            #expect(fields.contains(["X-Empty", ""]))
            #expect(!names.contains("accept"), "libcurl's default Accept must not be added")
            #expect(!names.contains("expect"), "no Expect: 100-continue, even for a large body")
            #expect(!names.contains("content-type"), "libcurl's form Content-Type must not be added")
            #expect(fields.contains(["Content-Length", "\(2 << 20)"]))
        }

        @Test(arguments: ["value\r\nInjected: yes", "value\nInjected: yes", "value\0"])
        func headerValueWithLineBreakOrNULIsRefused(value: String) async throws {
            let server = try currentServer()
            let request = HTTPRequest(url: try server.url("/echo/x"), headers: ["X-Bad": value])
            await #expect(throws: HTTPTransportError.invalidRequest) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test(arguments: ["X Bad", "X-Bad\r\nInjected", "X:Bad", ""])
        func headerNameThatIsNotATokenIsRefused(name: String) async throws {
            let server = try currentServer()
            let request = HTTPRequest(url: try server.url("/echo/x"), headers: HTTPHeaders([(name, "v")]))
            await #expect(throws: HTTPTransportError.invalidRequest) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test func methodThatIsNotATokenIsRefused() async throws {
            let server = try currentServer()
            let request = HTTPRequest(method: "GET /other HTTP/1.1\r\n", url: try server.url("/echo/x"))
            await #expect(throws: HTTPTransportError.invalidRequest) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/file", "gopher://127.0.0.1/", "mailto:someone@example.com"])
        func nonHTTPURLIsRefused(text: String) async throws {
            let url = try #require(URL(string: text))
            await #expect(throws: HTTPTransportError.unsupportedURL) {
                try await withTransport { transport in try await transport.send(HTTPRequest(url: url)) }
            }
        }
    }
}
