import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite struct Requests {
        @Test func postBodyArrivesIntact() async throws {
            let server = try currentServer()
            let body = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(method: .post, url: try server.url("/echo-body"), body: body))
            }
            #expect(response.status == 200)
            #expect(response.headers[HTTPField.Name("X-Method")!] == "POST")
            #expect(response.body == body)
        }

        @Test(arguments: ["PUT", "PATCH", "DELETE"])
        func otherMethodsSendTheirNameAndBody(method: String) async throws {
            let server = try currentServer()
            let body = Data("payload for \(method)".utf8)
            let response = try await withTransport { transport in
                try await transport.send(
                    HTTPTransportRequest(method: try #require(HTTPRequest.Method(method)), url: try server.url("/echo-body"), body: body))
            }
            #expect(response.headers[HTTPField.Name("X-Method")!] == method)
            #expect(response.body == body)
        }

        @Test func emptyPostSendsZeroLength() async throws {
            let server = try currentServer()
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(method: .post, url: try server.url("/echo-body")))
            }
            #expect(response.status == 200)
            #expect(response.headers[HTTPField.Name("X-Method")!] == "POST")
            #expect(response.body.isEmpty)
        }

        @Test func headRequestReturnsHeadersWithoutBody() async throws {
            let server = try currentServer()
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(method: .head, url: try server.url("/echo/hello")))
            }
            #expect(response.status == 200)
            #expect(response.headers[.contentLength] == "5")
            #expect(response.body.isEmpty)
        }

        @Test func headRequestForALargeResourceIsNotRefused() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(method: .head, url: try server.url("/big?size=\(64 << 20)"), maxResponseSize: 1000)
            let response = try await withTransport { transport in
                try await transport.send(request)
            }
            #expect(response.status == 200)
            #expect(response.headers[.contentLength] == "\(64 << 20)")
        }

        @Test func responseStatusHeadersAndURLAreReported() async throws {
            let server = try currentServer()
            let url = try server.url("/headers")
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(url: url))
            }
            #expect(response.status == 200)
            #expect(response.headers[HTTPField.Name("x-single")!] == "one")
            #expect(response.headers[values: HTTPField.Name("X-Multi")!] == ["a", "b"])
            #expect(response.headers[HTTPField.Name("X-Padded")!] == "padded value")
            #expect(response.headers[.contentType] == "application/json")
            #expect(response.headers[HTTPField.Name("X-Folded")!] == "first second")
            #expect(response.url == url)
        }

        @Test func requestIsSentAsBuilt() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(
                method: .post,
                url: try server.url("/headers"),
                headers: [HTTPField.Name("X-Custom")!: "value: with colon", HTTPField.Name("X-Empty")!: ""],
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

        /// A value cannot break the header block, whether built from a String
        /// or from raw bytes (`lenientValue`): swift-http-types turns CR, LF and
        /// NUL into spaces, and the field arrives as one.
        @Test(arguments: ["value\r\nInjected: yes", "value\nInjected: yes", "value\0Injected: yes"], [false, true])
        func headerValueWithLineBreakOrNULArrivesAsOneField(value: String, lenient: Bool) async throws {
            let server = try currentServer()
            let name = try #require(HTTPField.Name("X-Bad"))
            let field = lenient ? HTTPField(name: name, lenientValue: Array(value.utf8)) : HTTPField(name: name, value: value)
            let request = HTTPTransportRequest(url: try server.url("/headers"), headers: HTTPFields([field]))
            let response = try await withTransport { transport in try await transport.send(request) }
            let fields = try JSONDecoder().decode([[String]].self, from: response.body)
            let names = fields.compactMap { $0.first?.lowercased() }
            #expect(!names.contains("injected"))
            #expect(fields.contains { $0.first == "X-Bad" && $0.last?.hasSuffix("Injected: yes") == true })
        }

        /// A header name or a method that is not an HTTP token cannot be built
        /// at all, so none can reach libcurl's header list or request line.
        @Test(arguments: ["X Bad", "X-Bad\r\nInjected", "X:Bad", ""])
        func headerNameThatIsNotATokenCannotBeBuilt(name: String) {
            #expect(HTTPField.Name(name) == nil)
        }

        @Test func methodThatIsNotATokenCannotBeBuilt() {
            #expect(HTTPRequest.Method("GET /other HTTP/1.1\r\n") == nil)
        }

        @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/file", "gopher://127.0.0.1/", "mailto:someone@example.com"])
        func nonHTTPURLIsRefused(text: String) async throws {
            let url = try #require(URL(string: text))
            await #expect(throws: HTTPTransportError.unsupportedURL) {
                try await withTransport { transport in try await transport.send(HTTPTransportRequest(url: url)) }
            }
        }
    }
}
