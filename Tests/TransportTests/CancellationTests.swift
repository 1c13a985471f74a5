import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite(.timeLimit(.minutes(1))) struct Cancellation {
        @Test func cancelledBeforeStartThrowsWithoutSending() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let request = taggedRequest(try server.url("/echo/never"), tag: tag)
            let stats = try await withTransport { transport in
                let task = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await transport.send(request)
                }
                await #expect(throws: CancellationError.self) { try await task.value }
                return try await server.stats(tag: tag, via: transport)
            }
            #expect(stats.requests == 0)
        }

        #if DEBUG
        /// Holds the driver just before it starts the request to `tag`'s URL,
        /// cancels the sending Task there, then lets the driver go on: the
        /// request must not reach the server. `leads`: the caller drives the
        /// request itself (an idle transport), else the engine thread does.
        private func cancelJustBeforeStart(leads: Bool) async throws -> ServerStats {
            let server = try currentServer()
            let tag = uniqueTag()
            let request = taggedRequest(try server.url("/echo/\(tag)"), tag: tag)
            let reached = LockedValue(false)
            let proceed = DispatchSemaphore(value: 0)
            CurlEngineProbes.beforeStartProbe.withLock { probe in
                probe = { url in
                    // Not the server's counts (`stats` names the tag too).
                    guard url.contains("/echo/\(tag)") else { return }
                    reached.withLock { $0 = true }
                    _ = proceed.wait(timeout: .now() + 10)
                }
            }
            defer { CurlEngineProbes.beforeStartProbe.withLock { $0 = nil } }
            let configuration = CurlTransport.Configuration(callerDrivenWait: leads ? .milliseconds(100) : .zero)
            return try await withTransport(configuration, allowedCPUs: 2) { transport in
                // A kept-alive connection, on which the first turn of libcurl sends the request at once.
                _ = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/warm")))
                if leads {
                    for _ in 0..<5000 where !transport.firstThreadIsIdle {
                        try await Task.sleep(for: .milliseconds(1))
                    }
                }
                let task = Task { try await transport.send(request) }
                for _ in 0..<10_000 where !reached.withLock({ $0 }) {
                    try await Task.sleep(for: .milliseconds(1))
                }
                try #require(reached.withLock { $0 }, "the driver never came to start the request")
                task.cancel()
                if !leads {
                    // Told at once, while the driver still holds the request.
                    await #expect(throws: CancellationError.self) { try await task.value }
                }
                proceed.signal()
                await #expect(throws: CancellationError.self) { try await task.value }
                // Time for a request that went out after all to reach the server.
                try await Task.sleep(for: .milliseconds(200))
                return try await server.stats(tag: tag, via: transport)
            }
        }

        /// A request cancelled after its driver took it (the engine thread from
        /// its queue, or a leading caller), but before it started it, is never
        /// sent: its caller is told `CancellationError`, and a token POST must
        /// not spend its code. One at a time: the probe is the process's.
        @Test(.serialized, arguments: [false, true])
        func aRequestCancelledJustBeforeItStartsIsNeverSent(leads: Bool) async throws {
            let stats = try await cancelJustBeforeStart(leads: leads)
            #expect(stats.requests == 0)
        }
        #endif

        @Test func cancelledDuringTransferThrowsPromptly() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let request = taggedRequest(try server.url("/slow?delay=30"), tag: tag)
            try await withTransport { transport in
                let task = Task { try await transport.send(request) }
                try await server.waitForRequests(tag: tag, count: 1, via: transport)
                task.cancel()
                await #expect(throws: CancellationError.self) { try await task.value }
                // The transport goes on serving after a cancellation.
                let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/after")))
                #expect(response.bodyText == "after")
            }
        }

        @Test func cancelledAfterCompletionKeepsTheResponse() async throws {
            let server = try currentServer()
            let request = HTTPTransportRequest(url: try server.url("/echo/done"))
            let response = try await withTransport { transport in
                let task = Task { try await transport.send(request) }
                let response = try await task.value
                task.cancel()
                return response
            }
            #expect(response.bodyText == "done")
        }

        @Test func randomCancellationsResumeEveryCallerExactlyOnce() async throws {
            let server = try currentServer()
            // Every third request is slow (up to 9 ms); cancellations land before,
            // during and after transfers, in waves of 20 concurrent requests.
            let urls = try (0..<300).map { index in
                index.isMultiple(of: 3)
                    ? try server.url("/slow?delay=0.00\(index % 10)")
                    : try server.url("/echo/storm-\(index)")
            }
            let outcomes = try await withTransport { transport in
                var outcomes: [Outcome] = []
                for wave in stride(from: 0, to: urls.count, by: 20) {
                    await withTaskGroup(of: Outcome.self) { group in
                        for index in wave..<(wave + 20) {
                            let url = urls[index]
                            group.addTask {
                                let task = Task { try await transport.send(HTTPTransportRequest(url: url)) }
                                let delay = Int.random(in: 0...20_000)
                                if delay > 200 {
                                    try? await Task.sleep(for: .microseconds(delay))
                                }
                                task.cancel()
                                return Outcome(index: index, result: await task.result)
                            }
                        }
                        for await outcome in group {
                            outcomes.append(outcome)
                        }
                    }
                }
                return outcomes
            }
            #expect(outcomes.count == 300)
            for outcome in outcomes {
                switch outcome.result {
                case .success(let response):
                    let expected = outcome.index.isMultiple(of: 3) ? "slow" : "storm-\(outcome.index)"
                    #expect(response.bodyText == expected)
                case .failure(let error):
                    #expect(error is CancellationError, "request \(outcome.index) failed with \(error)")
                }
            }
        }

        struct Outcome: Sendable {
            var index: Int
            var result: Result<HTTPTransportResponse, any Error>
        }
    }
}
