import Foundation
import OAuth2
import Testing

/// Every CurlTransport test, grouped in nested suites (one file each), sharing one test server.
@Suite(.testServer)
struct CurlTransportTests {}

/// The server of the running suite.
func currentServer() throws -> TestServer {
    try #require(TestServer.current, "the suite runs without its test server")
}

/// Runs `body` with a fresh transport and shuts it down afterwards, whatever happens.
func withTransport<Result: Sendable>(
    _ configuration: CurlTransport.Configuration = CurlTransport.Configuration(),
    allowedCPUs: Int? = nil,
    _ body: (CurlTransport) async throws -> Result
) async throws -> Result {
    let transport = CurlTransport(configuration: configuration, allowedCPUs: allowedCPUs)
    do {
        let result = try await body(transport)
        await transport.shutdown()
        return result
    } catch {
        await transport.shutdown()
        throw error
    }
}

/// A tag that keeps one test's counts on the server apart from the others'.
func uniqueTag() -> String {
    UUID().uuidString
}

/// A GET carrying `tag` in `X-Test-Tag`.
func taggedRequest(_ url: URL, tag: String, timeout: Duration? = nil) -> HTTPTransportRequest {
    HTTPTransportRequest(url: url, headers: [HTTPField.Name("X-Test-Tag")!: tag], timeout: timeout)
}

/// What the server saw of one tag.
struct ServerStats: Decodable {
    var connections: Int
    var requests: Int
    /// The most requests with the tag the server was answering at once.
    var mostAtOnce: Int
}

/// How far the server got sending a `/big` body.
struct BigReport: Decodable {
    var sent: Int
    var complete: Bool
}

extension TestServer {
    /// The connections and requests the server counted for `tag`.
    func stats(tag: String, via transport: CurlTransport) async throws -> ServerStats {
        let response = try await transport.send(HTTPTransportRequest(url: try url("/stats?tag=\(tag)")))
        return try JSONDecoder().decode(ServerStats.self, from: response.body)
    }

    /// Waits (bounded) until the server has finished sending `/big` for `tag`, and returns its report.
    func bigReport(tag: String, via transport: CurlTransport) async throws -> BigReport {
        for _ in 0..<200 {
            let response = try await transport.send(HTTPTransportRequest(url: try url("/report?tag=\(tag)")))
            if response.status == 200 {
                return try JSONDecoder().decode(BigReport.self, from: response.body)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestServerError.gaveUpWaiting(tag)
    }

    /// Waits (bounded) until the server has received `count` requests tagged `tag`.
    func waitForRequests(tag: String, count: Int, via transport: CurlTransport) async throws {
        for _ in 0..<200 {
            if try await stats(tag: tag, via: transport).requests >= count {
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw TestServerError.gaveUpWaiting(tag)
    }

    /// Waits (bounded) until the server has received `count` requests tagged
    /// `tag`, asking through a transport of its own so the one under test is left alone.
    func waitForRequests(tag: String, count: Int = 1) async throws {
        let observer = CurlTransport()
        do {
            try await waitForRequests(tag: tag, count: count, via: observer)
            await observer.shutdown()
        } catch {
            await observer.shutdown()
            throw error
        }
    }
}
