import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    @Suite(.timeLimit(.minutes(1))) struct Shutdown {
        @Test func shutdownFailsEveryRequestInFlight() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let request = taggedRequest(try server.url("/hang"), tag: tag)
            // Four connections: the other requests wait inside the transport for one.
            let transport = CurlTransport(configuration: .init(maxConnectionsPerHost: 4))
            let tasks = (0..<20).map { _ in Task { try await transport.send(request) } }
            try await server.waitForRequests(tag: tag, count: 4)

            await transport.shutdown()
            for task in tasks {
                await #expect(throws: HTTPTransportError.shutDown) { try await task.value }
            }
        }

        #if DEBUG
        /// `shutdown()` returns once every thread the transport started has
        /// stopped, a second thread starting at that very moment included.
        @Test func shutdownWaitsForASecondThreadStartingAtThatMoment() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            // A timeout no other test uses tells this test's engines apart: the probe is the process's.
            let marker = Duration.milliseconds(29_017)
            let transportBox = LockedValue<CurlTransport?>(nil)
            let enginesStarted = LockedValue(0)
            let events = LockedValue<[String]>([])
            let shutdownTask = LockedValue<Task<Bool, Never>?>(nil)
            CurlEngineProbes.engineStartedProbe.withLock { probe in
                probe = { configuration, hasStopped in
                    guard configuration.timeout == marker,
                        enginesStarted.withLock({
                            $0 += 1
                            return $0
                        }) == 2,
                        let transport = transportBox.withLock({ $0 })
                    else { return }
                    // The second engine's thread runs; shutdown() begins before its starter is done.
                    let task = Task.detached {
                        await transport.shutdown()
                        events.withLock { $0.append("shutdown returned") }
                        return hasStopped()
                    }
                    shutdownTask.withLock { $0 = task }
                    Thread.sleep(forTimeInterval: 0.3)
                    events.withLock { $0.append("second engine started") }
                }
            }
            defer { CurlEngineProbes.engineStartedProbe.withLock { $0 = nil } }
            let transport = CurlTransport(configuration: .init(timeout: marker), allowedCPUs: 2)
            transportBox.withLock { $0 = transport }
            defer { transportBox.withLock { $0 = nil } }
            let request = taggedRequest(try server.url("/hang"), tag: tag)
            // More than 4 in flight start the second thread.
            let tasks = (0..<12).map { _ in Task { try await transport.send(request) } }
            for _ in 0..<10_000 where shutdownTask.withLock({ $0 }) == nil {
                try await Task.sleep(for: .milliseconds(1))
            }
            let shutdown = try #require(shutdownTask.withLock { $0 }, "no second thread started")
            let secondStoppedWhenShutdownReturned = await shutdown.value
            #expect(secondStoppedWhenShutdownReturned)
            #expect(events.withLock { $0 } == ["second engine started", "shutdown returned"])
            for task in tasks {
                await #expect(throws: HTTPTransportError.shutDown) { try await task.value }
            }
        }
        #endif

        @Test func sendAfterShutdownFails() async throws {
            let server = try currentServer()
            let transport = CurlTransport()
            await transport.shutdown()
            await #expect(throws: HTTPTransportError.shutDown) {
                try await transport.send(HTTPTransportRequest(url: try server.url("/echo/late")))
            }
        }

        @Test func shutdownIsIdempotent() async throws {
            let server = try currentServer()
            let transport = CurlTransport()
            let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/once")))
            #expect(response.bodyText == "once")
            await transport.shutdown()
            await transport.shutdown()
            await #expect(throws: HTTPTransportError.shutDown) {
                try await transport.send(HTTPTransportRequest(url: try server.url("/echo/twice")))
            }
        }
    }
}
