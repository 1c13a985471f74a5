import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    /// ``CurlTransport/Configuration/maxThreads``: a second thread starts when
    /// the first has 4 requests in flight (8 with one CPU), takes part of
    /// them, and the connection limits hold over both.
    @Suite(.timeLimit(.minutes(1))) struct SecondThread {
        /// Sends `count` requests to `/hang` at once, tagged `tag`, from tasks
        /// that prefer `executor` (none: the global one), and returns once the
        /// server has them all; they end when the tasks are cancelled or the
        /// transport shuts down.
        private func hang(
            _ count: Int, on transport: CurlTransport, tag: String, executor: (any TaskExecutor)? = nil
        ) async throws -> [Task<HTTPTransportResponse, any Error>] {
            let server = try currentServer()
            let request = taggedRequest(try server.url("/hang"), tag: tag)
            let tasks = (0..<count).map { _ in Task(executorPreference: executor) { try await transport.send(request) } }
            try await server.waitForRequests(tag: tag, count: count)
            return tasks
        }

        /// Cancels `tasks`, each of which must then throw `CancellationError`.
        private func cancelAll(_ tasks: [Task<HTTPTransportResponse, any Error>]) async {
            for task in tasks { task.cancel() }
            for task in tasks {
                await #expect(throws: CancellationError.self) { try await task.value }
            }
        }

        @Test func sequentialRequestsKeepToOneThread() async throws {
            let server = try currentServer()
            try await withTransport { transport in
                for index in 0..<20 {
                    let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/\(index)")))
                    #expect(response.bodyText == "\(index)")
                }
                #expect(transport.threadsStarted == 1)
            }
        }

        @Test(arguments: [2, 1])
        func theSecondThreadStartsOnceTheFirstHasEnoughInFlight(allowedCPUs: Int) async throws {
            let threshold = allowedCPUs == 1 ? 8 : 4
            let tag = uniqueTag()
            try await withTransport(allowedCPUs: allowedCPUs) { transport in
                var hanging = try await hang(threshold, on: transport, tag: tag)
                #expect(transport.threadsStarted == 1, "\(threshold) in flight are the first thread's")
                #expect(transport.firstThreadLimits?.transfersPerHost == 64, "the whole limits while it is alone")
                #expect(transport.firstThreadLimits?.connections == 64)
                hanging += try await hang(1, on: transport, tag: uniqueTag())
                #expect(transport.threadsStarted == 2)
                #expect(transport.firstThreadLimits?.transfersPerHost == 32, "half, the second has the other")
                #expect(transport.firstThreadLimits?.connections == 32)
                await cancelAll(hanging)
            }
        }

        /// Many requests over both threads, in waves: each gets its own
        /// answer, and the server never sees more than the per-host limit at
        /// once, nor more connections, though each thread has its own.
        @Test func requestsOverBothThreadsKeepTheLimitsAndAllComplete() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let configuration = CurlTransport.Configuration(maxConnections: 16, maxConnectionsPerHost: 16)
            let (bodies, stats, threads) = try await withTransport(configuration) { transport in
                let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                    for index in 0..<200 {
                        let url = try server.url(index % 3 == 0 ? "/slow?delay=0.02" : "/echo/\(index)")
                        group.addTask { (index, try await transport.send(taggedRequest(url, tag: tag)).bodyText) }
                        if index % 50 == 49 {
                            try await Task.sleep(for: .milliseconds(5))
                        }
                    }
                    return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
                }
                return (bodies, try await server.stats(tag: tag, via: transport), transport.threadsStarted)
            }
            #expect(threads == 2)
            #expect(bodies.count == 200)
            for index in 0..<200 where bodies[index] != (index % 3 == 0 ? "slow" : "\(index)") {
                Issue.record("request \(index) got \(bodies[index] ?? "nothing")")
            }
            #expect(stats.requests == 200)
            #expect(stats.mostAtOnce <= 16, "the server answered \(stats.mostAtOnce) at once")
            #expect(stats.connections <= 16, "\(stats.connections) connections")
        }

        @Test(arguments: [
            CurlTransport.Configuration(maxThreads: 1),
            CurlTransport.Configuration(maxConnectionsPerHost: 15),
            CurlTransport.Configuration(maxConnections: 8),
        ])
        func oneThreadWhenToldOrWhenTheLimitsAreSmall(configuration: CurlTransport.Configuration) async throws {
            let tag = uniqueTag()
            try await withTransport(configuration) { transport in
                let hanging = try await hang(8, on: transport, tag: tag)
                #expect(transport.threadsStarted == 1)
                await cancelAll(hanging)
            }
        }

        /// Tasks on the transport's executor never start a second thread, so
        /// alone they have the whole per-host limit: 12 requests to one host
        /// run at once under a limit of 16, though half of it is 8. A second
        /// thread starts only while the first has no more than its half in
        /// flight, so that the halves keep the limits: with those 12 in
        /// flight, another task's request goes to the first thread too.
        @Test func tasksOnTheExecutorAloneHaveTheWholeLimits() async throws {
            let tag = uniqueTag()
            try await withTransport(.init(maxConnectionsPerHost: 16)) { transport in
                let executor = try #require(transport.executor)
                var hanging = try await hang(12, on: transport, tag: tag, executor: executor)
                #expect(transport.threadsStarted == 1)
                hanging += try await hang(1, on: transport, tag: uniqueTag())
                #expect(transport.threadsStarted == 1, "12 in flight are more than the first thread's half")
                #expect(transport.firstThreadLimits?.transfersPerHost == 16)
                await cancelAll(hanging)
            }
        }

        /// Tasks on the transport's executor are served by its thread without
        /// a hand-off; a request of theirs never goes to the second thread.
        @Test func tasksOnTheExecutorKeepToItsThread() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            try await withTransport { transport in
                let executor = try #require(transport.executor)
                let request = taggedRequest(try server.url("/hang"), tag: tag)
                let tasks = (0..<8).map { _ in Task(executorPreference: executor) { try await transport.send(request) } }
                try await server.waitForRequests(tag: tag, count: 8)
                #expect(transport.threadsStarted == 1)
                await cancelAll(tasks)
            }
        }

        /// Shutdown fails the requests on both threads and stops both; later
        /// sends throw ``HTTPTransportError/shutDown``.
        @Test func shutdownEndsTheRequestsOfBothThreads() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let transport = CurlTransport()
            let hanging = try await hang(12, on: transport, tag: tag)
            #expect(transport.threadsStarted == 2)
            await transport.shutdown()
            for task in hanging {
                await #expect(throws: HTTPTransportError.shutDown) { try await task.value }
            }
            await #expect(throws: HTTPTransportError.shutDown) {
                try await transport.send(HTTPTransportRequest(url: try server.url("/echo/late")))
            }
        }
    }
}
