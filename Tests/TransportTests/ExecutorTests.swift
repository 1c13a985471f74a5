import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite(.timeLimit(.minutes(1))) struct Executor {
        @Test func aTaskPreferringTheTransportRunsOnItsThread() async throws {
            let server = try currentServer()
            let url = try server.url("/echo/where")
            try await withTransport { transport in
                let executor = try #require(transport.executor)
                let (bodyText, thread) = try await withTaskExecutorPreference(executor) {
                    let response = try await transport.send(HTTPTransportRequest(url: url))
                    return (response.bodyText, currentThreadName())
                }
                #expect(bodyText == "where")
                #expect(thread == "oauth2-curl")
                // Without the preference the caller goes on elsewhere.
                _ = try await transport.send(HTTPTransportRequest(url: url))
                #expect(currentThreadName() != "oauth2-curl")
            }
        }

        @Test func aTaskOnTheTransportThreadCanBeCancelledMidTransfer() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let request = taggedRequest(try server.url("/slow?delay=30"), tag: tag)
            try await withTransport { transport in
                let executor = try #require(transport.executor)
                let task = Task(executorPreference: executor) { try await transport.send(request) }
                try await server.waitForRequests(tag: tag, count: 1, via: transport)
                task.cancel()
                await #expect(throws: CancellationError.self) { try await task.value }
                // The thread is free for the next request.
                let after = try await Task(executorPreference: executor) {
                    try await transport.send(HTTPTransportRequest(url: try server.url("/echo/after")))
                }.value
                #expect(after.bodyText == "after")
            }
        }

        @Test func tasksPreferringTheTransportThreadGetTheirResponses() async throws {
            let server = try currentServer()
            let transport = CurlTransport()
            let executor = try #require(transport.executor)
            let bodies = try await withTaskExecutorPreference(executor) {
                try await withThrowingTaskGroup(of: String.self) { group in
                    for index in 0..<8 {
                        group.addTask {
                            var last = ""
                            for round in 0..<5 {
                                last = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/e\(index)r\(round)")))
                                    .bodyText
                            }
                            return last
                        }
                    }
                    return try await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
            }
            #expect(bodies == Set((0..<8).map { "e\($0)r4" }))
            await transport.shutdown()
        }

        @Test func aTaskPreferringAShutDownTransportStillRuns() async throws {
            let server = try currentServer()
            let transport = CurlTransport()
            let executor = try #require(transport.executor)
            let task = Task(executorPreference: executor) {
                let first = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/before")))
                await transport.shutdown()
                // The transport thread is gone: the task goes on elsewhere and its send fails cleanly.
                do {
                    _ = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/after")))
                    return (first.bodyText, false)
                } catch let error as HTTPTransportError {
                    return (first.bodyText, error == .shutDown)
                }
            }
            let (first, failedWithShutDown) = try await task.value
            #expect(first == "before")
            #expect(failedWithShutDown)
        }
    }
}

/// The name of the thread running the caller.
private func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .whitespacesAndNewlines)
}
