import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite struct ConnectionReuse {
        @Test func sequentialRequestsReuseOneConnection() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let stats = try await withTransport { transport in
                for index in 0..<200 {
                    let response = try await transport.send(taggedRequest(try server.url("/echo/\(index)"), tag: tag))
                    #expect(response.bodyText == "\(index)")
                }
                return try await server.stats(tag: tag, via: transport)
            }
            #expect(stats.requests == 200)
            #expect(stats.connections <= 2, "keep-alive should carry 200 sequential requests on one connection")
        }

        @Test func concurrentRequestsEachGetTheirOwnBody() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let (bodies, stats) = try await withTransport { transport in
                let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                    for index in 0..<200 {
                        let url = try server.url("/echo/request-\(index)")
                        group.addTask {
                            let response = try await transport.send(taggedRequest(url, tag: tag))
                            return (index, response.bodyText)
                        }
                    }
                    var bodies: [Int: String] = [:]
                    for try await (index, body) in group {
                        bodies[index] = body
                    }
                    return bodies
                }
                return (bodies, try await server.stats(tag: tag, via: transport))
            }
            #expect(bodies.count == 200)
            for index in 0..<200 {
                #expect(bodies[index] == "request-\(index)")
            }
            #expect(stats.connections <= 64, "no more connections than maxConnectionsPerHost")
        }
    }
}
