import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    /// The transport keeps an easy handle configured for the next transfer of
    /// the same kind and resets it for any other: nothing of one request may
    /// reach the next.
    @Suite struct HandleReuse {
        /// One request of a sequence and what the server must have seen of it.
        struct Step: Sendable {
            var request: HTTPTransportRequest
            var status = 200
            var method: String?
            var body: Data?
        }

        @Test func requestsOfEveryKindInTurnCarryNothingOver() async throws {
            let server = try currentServer()
            let echo = try server.url("/echo-body")
            let a = Data("first body".utf8)
            let b = Data("second, longer body".utf8)
            let steps = [
                Step(request: HTTPTransportRequest(url: echo), method: "GET", body: Data()),
                Step(request: HTTPTransportRequest(method: .post, url: echo, body: a), method: "POST", body: a),
                Step(request: HTTPTransportRequest(method: .post, url: echo, body: b), method: "POST", body: b),
                // After a POST, a GET is a GET without a body.
                Step(request: HTTPTransportRequest(url: echo), method: "GET", body: Data()),
                Step(request: HTTPTransportRequest(method: .head, url: try server.url("/echo/hello")), body: Data()),
                // After a HEAD, a GET gets its body.
                Step(request: HTTPTransportRequest(url: try server.url("/echo/hello")), body: Data("hello".utf8)),
                Step(request: HTTPTransportRequest(method: .put, url: echo, body: a), method: "PUT", body: a),
                // A DELETE without a body after a PUT with one sends none.
                Step(request: HTTPTransportRequest(method: .delete, url: echo), method: "DELETE", body: Data()),
                Step(request: HTTPTransportRequest(method: .post, url: echo), method: "POST", body: Data()),
                // Following a redirect, then a request that must not follow.
                Step(
                    request: HTTPTransportRequest(url: try server.url("/redirect?to=/echo/target"), redirects: .follow),
                    body: Data("target".utf8)),
                Step(request: HTTPTransportRequest(url: try server.url("/redirect?to=/echo/target")), status: 302),
                Step(request: HTTPTransportRequest(url: echo, timeout: .seconds(5)), method: "GET", body: Data()),
            ]
            try await withTransport { transport in
                // Twice over, so every kind also follows every other kind's handle.
                for (index, step) in (steps + steps.reversed()).enumerated() {
                    let response = try await transport.send(step.request)
                    #expect(response.status.code == step.status, "step \(index): \(step.request.method) \(step.request.url)")
                    if let method = step.method {
                        #expect(response.headers[HTTPField.Name("X-Method")!] == method, "step \(index)")
                    }
                    if let body = step.body {
                        #expect(response.body == body, "step \(index)")
                    }
                }
            }
        }

        @Test func headersOfOneRequestDoNotReachTheNext() async throws {
            let server = try currentServer()
            let url = try server.url("/headers")
            try await withTransport { transport in
                for round in 0..<3 {
                    let with = try await transport.send(
                        HTTPTransportRequest(url: url, headers: [HTTPField.Name("X-Only-Here")!: "\(round)"]))
                    let without = try await transport.send(HTTPTransportRequest(url: url))
                    let sent = try JSONDecoder().decode([[String]].self, from: with.body).map { $0[0].lowercased() }
                    let notSent = try JSONDecoder().decode([[String]].self, from: without.body).map { $0[0].lowercased() }
                    #expect(sent.contains("x-only-here"))
                    #expect(!notSent.contains("x-only-here"))
                }
            }
        }
    }
}
