import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite struct Failures {
        @Test func serverThatNeverAnswersTimesOut() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.url("/hang"), timeout: .milliseconds(300))
            await #expect(throws: HTTPTransportError.timeout) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test func transportDefaultTimeoutAppliesWhenTheRequestSetsNone() async throws {
            let server = try currentServer()
            let configuration = CurlTransport.Configuration(timeout: .milliseconds(300))
            let request = HTTPTransportRequest(url: try server.url("/hang"))
            await #expect(throws: HTTPTransportError.timeout) {
                try await withTransport(configuration) { transport in try await transport.send(request) }
            }
        }

        @Test func closedPortFailsToConnect() async throws {
            let server = try currentServer()
            let error = try await withTransport { transport in
                let port = try await transport.send(HTTPTransportRequest(url: try server.url("/closed-port"))).bodyText
                let url = try #require(URL(string: "http://127.0.0.1:\(port)/"))
                return await #expect(throws: HTTPTransportError.connectFailed) {
                    try await transport.send(HTTPTransportRequest(url: url))
                }
            }
            #expect(error?.message.contains("127.0.0.1") == true, "the message carries libcurl's detail")
        }

        @Test(arguments: [false, true])
        func bodyOverTheLimitIsRefusedWithoutReadingItAll(chunked: Bool) async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let size = 64 << 20
            let url = try server.url("/big?size=\(size)&chunked=\(chunked ? 1 : 0)&tag=\(tag)")
            let report = try await withTransport { transport in
                await #expect(throws: HTTPTransportError.responseTooLarge) {
                    try await transport.send(HTTPTransportRequest(url: url, maxResponseSize: 1 << 20))
                }
                return try await server.bigReport(tag: tag, via: transport)
            }
            #expect(!report.complete, "the transport must hang up instead of reading 64 MiB")
            #expect(report.sent < size)
        }

        @Test func transportDefaultSizeLimitAppliesWhenTheRequestSetsNone() async throws {
            let server = try currentServer()
            let configuration = CurlTransport.Configuration(maxResponseSize: 1000)
            let url = try server.url("/big?size=1001&chunked=1&tag=\(uniqueTag())")
            await #expect(throws: HTTPTransportError.responseTooLarge) {
                try await withTransport(configuration) { transport in try await transport.send(HTTPTransportRequest(url: url)) }
            }
        }

        @Test func bodyExactlyAtTheLimitIsAccepted() async throws {
            let server = try currentServer()
            let url = try server.url("/big?size=1000&chunked=1&tag=\(uniqueTag())")
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(url: url, maxResponseSize: 1000))
            }
            #expect(response.body.count == 1000)
        }

        // The transport reserved what Content-Length announced: under a raised
        // limit, 2^62 bytes made the allocation fail and Data trap.
        @Test func aHugeAnnouncedBodyUnderARaisedLimitIsNotReservedAndTheProcessLives() async throws {
            let server = try ScriptedServer()
            defer { server.stop() }
            server.enqueue(.close(afterSending: Array("HTTP/1.1 200 OK\r\nContent-Length: \(1 << 62)\r\n\r\nhello".utf8)))
            let request = HTTPTransportRequest(url: try server.url("/"), maxResponseSize: .max)
            await #expect(throws: HTTPTransportError.connectionLost) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test func aBodyLongerThanTheReservationGrowsAsItArrives() async throws {
            let server = try currentServer()
            let size = 3 << 20
            let url = try server.url("/big?size=\(size)&chunked=0&tag=\(uniqueTag())")
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(url: url, maxResponseSize: 8 << 20))
            }
            #expect(response.body.count == size)
        }

        /// The response a ScriptedServer sends once, as the transport returns it.
        private func response(to reply: String) async throws -> HTTPTransportResponse {
            let server = try ScriptedServer()
            defer { server.stop() }
            server.enqueue(.close(afterSending: Array(reply.utf8)))
            let request = HTTPTransportRequest(url: try server.url("/"))
            return try await withTransport { transport in try await transport.send(request) }
        }

        // A line starting `HTTP/` was taken for a new response wherever it
        // came: it wiped the fields before it and, as a trailer, the body.
        // libcurl 7.88 refuses a field line without a colon, so these have one.
        @Test func aStatusLineAmongTheFieldsIsNotANewResponse() async throws {
            let response = try await response(
                to: "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer error=\"invalid_token\"\r\nHTTP/1.1 200 OK: yes\r\n"
                    + "Content-Length: 2\r\n\r\nno")
            #expect(response.status == 401)
            #expect(response.headers[.wwwAuthenticate] == "Bearer error=\"invalid_token\"")
            #expect(response.bodyText == "no")
        }

        @Test func aStatusLineAsATrailerWipesNothingAndTrailersAreNoFields() async throws {
            let response = try await response(
                to: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                    + "HTTP/1.1 204 No Content: yes\r\nX-Late: 1\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.bodyText == "hello")
            #expect(!response.headers.contains(HTTPField.Name("X-Late")!))
        }

        @Test func headersOverTheirLimitAreRefused() async throws {
            let server = try currentServer()
            // 4,000 fields of about 100 bytes: over the 256 KiB the transport accepts.
            let request = HTTPTransportRequest(url: try server.url("/many-headers?count=4000"))
            await #expect(throws: HTTPTransportError.responseTooLarge) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test func manyHeadersUnderTheLimitAreAccepted() async throws {
            let server = try currentServer()
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(url: try server.url("/many-headers?count=1000")))
            }
            #expect(response.headers.contains(HTTPField.Name("X-Field-999")!))
        }

        @Test func connectionDroppedMidResponseIsConnectionLost() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.url("/drop"))
            await #expect(throws: HTTPTransportError.connectionLost) {
                try await withTransport { transport in try await transport.send(request) }
            }
        }

        @Test func errorStatusIsAResponseNotAnError() async throws {
            let server = try currentServer()
            let response = try await withTransport { transport in
                try await transport.send(HTTPTransportRequest(url: try server.url("/missing")))
            }
            #expect(response.status == 404)
            #expect(response.bodyText == "not found")
        }
    }
}
