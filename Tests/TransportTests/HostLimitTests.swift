import Foundation
import OAuth2
import Synchronization
import Testing

extension CurlTransportTests {
    /// ``CurlTransport/Configuration/maxConnectionsPerHost``: requests beyond it
    /// wait inside the transport, in order, and their timeout runs meanwhile.
    @Suite(.timeLimit(.minutes(1))) struct HostLimit {
        /// Takes `transport`'s one connection to the test server with a
        /// request to `/hang`, returned once the server has it; it ends when
        /// the returned task is cancelled, which calls `ended`.
        private func occupyTheOneConnection(
            of transport: CurlTransport, tag: String, ended: @escaping @Sendable () -> Void = {}
        ) async throws -> Task<HTTPTransportResponse, any Error> {
            let server = try currentServer()
            let url = try server.url("/hang")
            let hanging = Task {
                defer { ended() }
                return try await transport.send(taggedRequest(url, tag: tag))
            }
            try await server.waitForRequests(tag: tag)
            return hanging
        }

        /// Many more requests than the limit, sent in waves while earlier ones
        /// complete: the server never answers more than the limit at once, on
        /// no more connections, and every request gets its own answer (one
        /// the queue forgot would fail when its 30-second timeout ran out).
        @Test func requestsBeyondTheLimitWaitTheirTurnAndAllCompleteWithoutStalling() async throws {
            let server = try currentServer()
            let requests = 240
            for round in 0..<4 {
                let tag = uniqueTag()
                let (bodies, stats) = try await withTransport(.init(maxConnectionsPerHost: 2)) { transport in
                    let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                        for index in 0..<requests {
                            let url = try server.url("/echo/\(round)-\(index)")
                            group.addTask {
                                let response = try await transport.send(taggedRequest(url, tag: tag))
                                return (index, response.bodyText)
                            }
                            if index % 40 == 39 {
                                // The next wave arrives while this one is being answered.
                                try await Task.sleep(for: .milliseconds(2))
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
                #expect(bodies.count == requests)
                for index in 0..<requests where bodies[index] != "\(round)-\(index)" {
                    Issue.record("request \(index) got \(bodies[index] ?? "nothing")")
                }
                #expect(stats.requests == requests)
                #expect(stats.mostAtOnce <= 2, "the server answered \(stats.mostAtOnce) at once")
                #expect(stats.connections <= 2, "\(stats.connections) connections")
            }
        }

        @Test func aWaitingRequestTimesOutOnItsOwnTimeWhileTheHostIsBusy() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            try await withTransport(.init(maxConnectionsPerHost: 1)) { transport in
                let hangingEnded = Atomic<Bool>(false)
                let hanging = try await occupyTheOneConnection(of: transport, tag: tag) {
                    hangingEnded.store(true, ordering: .releasing)
                }

                // The one connection is taken: this request waits, and its 300 ms run out there.
                await #expect(throws: HTTPTransportError.timeout) {
                    try await transport.send(taggedRequest(try server.url("/echo/late"), tag: tag, timeout: .milliseconds(300)))
                }
                let ended = hangingEnded.load(ordering: .acquiring)
                #expect(!ended, "it timed out while the host was still busy, not after")
                let stats = try await withTransport { try await server.stats(tag: tag, via: $0) }
                #expect(stats.requests == 1, "the request that timed out waiting never reached the server")

                hanging.cancel()
                await #expect(throws: CancellationError.self) { try await hanging.value }
                // The connection is free again: the next request goes through.
                let response = try await transport.send(taggedRequest(try server.url("/echo/after"), tag: tag))
                #expect(response.bodyText == "after")
            }
        }

        @Test func aWaitingRequestCancelledNeverReachesTheServer() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            try await withTransport(.init(maxConnectionsPerHost: 1)) { transport in
                let hanging = try await occupyTheOneConnection(of: transport, tag: tag)

                // Both wait for the one connection, which stays taken until `hanging` is cancelled.
                let waiting = Task { try await transport.send(taggedRequest(try server.url("/echo/never"), tag: tag)) }
                let behind = Task { try await transport.send(taggedRequest(try server.url("/echo/behind"), tag: tag)) }
                try await Task.sleep(for: .milliseconds(100))
                waiting.cancel()
                await #expect(throws: CancellationError.self) { try await waiting.value }

                hanging.cancel()
                await #expect(throws: CancellationError.self) { try await hanging.value }
                #expect(try await behind.value.bodyText == "behind")
                let stats = try await withTransport { try await server.stats(tag: tag, via: $0) }
                #expect(stats.requests == 2, "the cancelled request was never sent")
            }
        }

        @Test func otherHostsDoNotWaitForABusyOne() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            try await withTransport(.init(maxConnectionsPerHost: 1)) { transport in
                let hanging = try await occupyTheOneConnection(of: transport, tag: tag)

                // 127.0.0.1 is busy; localhost is another host with a connection of its own.
                var components = try #require(URLComponents(url: try server.url("/echo/other"), resolvingAgainstBaseURL: false))
                components.host = "localhost"
                let other = try #require(components.url)
                let response = try await transport.send(taggedRequest(other, tag: tag))
                #expect(response.bodyText == "other")

                hanging.cancel()
                await #expect(throws: CancellationError.self) { try await hanging.value }
            }
        }

        /// Cancellations and timeouts at random, in and out of the queue: every
        /// request ends (answered, cancelled or timed out), and afterwards the
        /// transport still lets exactly the limit through at once.
        @Test func cancellationsAndTimeoutsAtRandomKeepTheCountRight() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            var generator = SystemRandomNumberGenerator()
            let plan = (0..<150).map { _ in
                (
                    delay: [0, 0, 0.02, 0.05].randomElement(using: &generator) ?? 0,
                    timeout: Bool.random(using: &generator) ? Duration.milliseconds(Int.random(in: 20...200, using: &generator)) : nil,
                    cancelAfter: Bool.random(using: &generator) ? Int.random(in: 0...150, using: &generator) : nil
                )
            }
            try await withTransport(.init(maxConnectionsPerHost: 3)) { transport in
                let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                    for (index, step) in plan.enumerated() {
                        let url = try server.url(step.delay > 0 ? "/slow?delay=\(step.delay)" : "/echo/\(index)")
                        let request = taggedRequest(url, tag: tag, timeout: step.timeout)
                        let task = Task { try await transport.send(request) }
                        group.addTask {
                            if let cancelAfter = step.cancelAfter {
                                try await Task.sleep(for: .milliseconds(cancelAfter))
                                task.cancel()
                            }
                            do {
                                _ = try await task.value
                                return "answered"
                            } catch is CancellationError {
                                return "cancelled"
                            } catch let error as HTTPTransportError where error == .timeout {
                                return "timed out"
                            }
                        }
                    }
                    var outcomes: [String: Int] = [:]
                    for try await outcome in group {
                        outcomes[outcome, default: 0] += 1
                    }
                    return outcomes
                }
                #expect(outcomes.values.reduce(0, +) == plan.count, "\(outcomes)")

                // The server may still be answering requests whose callers gave
                // up, so its count under `tag` says nothing. Under a new tag, a
                // burst shows whether the transport's own count came back right:
                // too low lets more than 3 through, too high starves them.
                let after = uniqueTag()
                let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<30 {
                        let request = taggedRequest(try server.url("/slow?delay=0.01"), tag: after)
                        group.addTask { try await transport.send(request).bodyText }
                    }
                    return try await group.reduce(into: [String]()) { $0.append($1) }
                }
                #expect(bodies == Array(repeating: "slow", count: 30))
                let stats = try await withTransport { try await server.stats(tag: after, via: $0) }
                #expect(stats.mostAtOnce <= 3, "the server answered \(stats.mostAtOnce) at once")
                let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/last")))
                #expect(response.bodyText == "last")
            }
        }
    }
}
