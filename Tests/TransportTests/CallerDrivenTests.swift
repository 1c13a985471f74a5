import Foundation
import OAuth2
import Testing

/// A caller that finds the transport idle drives its own request for up to
/// `callerDrivenWait`, then hands it to the transport thread. Whoever drives,
/// the answer, the connection reuse, cancellation, timeouts and shutdown must
/// be the same; and a leading caller must give libcurl up as soon as anyone
/// else needs it.
///
/// Serialized: a caller leading for 10 s blocks its thread, and two such
/// callers at once would hold both cooperative threads of a two-core machine,
/// so that nothing could come along to end their leads.
extension CurlTransportTests {
    @Suite(.serialized, .timeLimit(.minutes(1))) struct CallerDriven {
        /// Long enough that, in these tests, only new work, cancellation or
        /// shutdown can end a lead.
        static let longLead = CurlTransport.Configuration(callerDrivenWait: .seconds(10))

        /// Each wait, as on this machine and as in a process allowed on one CPU,
        /// where a caller yields before it leads.
        @Test(arguments: [Duration.zero, .milliseconds(1), .seconds(10)], [nil, 1] as [Int?])
        func sequentialAnswersAndConnectionReuseAreTheSameWhoeverDrives(wait: Duration, allowedCPUs: Int?) async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let observer = CurlTransport()
            let stats = try await withTransport(.init(callerDrivenWait: wait), allowedCPUs: allowedCPUs) { transport in
                for index in 0..<50 {
                    let response = try await transport.send(taggedRequest(try server.url("/echo/\(index)"), tag: tag))
                    #expect(response.status == .ok)
                    #expect(response.bodyText == "\(index)")
                }
                // Asked through another transport, so this one stays idle between requests.
                return try await server.stats(tag: tag, via: observer)
            }
            await observer.shutdown()
            #expect(stats.requests == 50)
            #expect(stats.connections == 1, "a caller driving libcurl uses the transport's connection cache")
        }

        @Test func anAnswerSlowerThanTheLeadArrivesThroughTheTransportThread() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let observer = CurlTransport()
            let stats = try await withTransport(.init(callerDrivenWait: .milliseconds(1))) { transport in
                for _ in 0..<3 {
                    let response = try await transport.send(taggedRequest(try server.url("/slow?delay=0.1"), tag: tag))
                    #expect(response.bodyText == "slow")
                }
                return try await server.stats(tag: tag, via: observer)
            }
            await observer.shutdown()
            #expect(stats.requests == 3)
            #expect(stats.connections == 1)
        }

        // A lead whose answer does not come in time means a host too slow for
        // leading to help, or a quick one that stalled once: nobody leads for
        // a while after it, so its callers' threads (with one CPU, the pool's
        // only one) are not blocked for the whole wait every time. The pause
        // doubles with each such lead in a row; an answer in time from the
        // same host ends the series, and a quick answer sets no pause.
        @Test(arguments: [nil, 1] as [Int?])
        func leadsThatRunOutOfTimePauseLeadsLongerEachTimeAndAQuickAnswerFromTheirHostEndsTheSeries(allowedCPUs: Int?) async throws {
            let server = try currentServer()
            let wait = Duration.milliseconds(150)
            try await withTransport(.init(callerDrivenWait: wait), allowedCPUs: allowedCPUs) { transport in
                let quick = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/quick")))
                #expect(quick.bodyText == "quick")
                #expect(try #require(transport.leadPauseRemaining) < .zero)
                #expect(transport.leadsRunOutOfTimeInARow == 0)

                // Each slow request leads (the previous pause is over), runs out
                // of the lead's time, and is answered through the engine thread.
                // The pause ends its length after the lead ran out: at least the
                // wait and the pause after sending (the clock read after the
                // pause, so that the time between the reads only widens the
                // bound), and no more than the pause is left once the answer came
                // (the lead ran out before it).
                for slowLeads in 1...3 {
                    try await untilLeadsMayStart(transport)
                    let clock = ContinuousClock()
                    let sent = clock.now
                    let slow = try await transport.send(HTTPTransportRequest(url: try server.url("/slow?delay=0.3")))
                    let remaining = try #require(transport.leadPauseRemaining)
                    let read = sent.duration(to: clock.now)
                    #expect(slow.bodyText == "slow")
                    #expect(transport.leadsRunOutOfTimeInARow == slowLeads)
                    let pause = CurlTransport.leadPause(afterSlowLeads: slowLeads)
                    #expect(read + remaining >= wait + pause)
                    #expect(remaining <= pause)
                }

                // A quick answer from another host (localhost, not 127.0.0.1)
                // says nothing about the slow one: the series goes on.
                try await untilLeadsMayStart(transport)
                var otherHost = try #require(URLComponents(url: try server.url("/echo/other"), resolvingAgainstBaseURL: false))
                otherHost.host = "localhost"
                let other = try await transport.send(HTTPTransportRequest(url: try #require(otherHost.url)))
                #expect(other.bodyText == "other")
                #expect(transport.leadsRunOutOfTimeInARow == 3, "another host's quick answer ends no series")
                #expect(try #require(transport.leadPauseRemaining) < .zero)

                let inTime = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/again")))
                #expect(inTime.bodyText == "again")
                #expect(transport.leadsRunOutOfTimeInARow == 0, "an answer within the lead from the same host ends the series")
                #expect(try #require(transport.leadPauseRemaining) < .zero)
            }
        }

        @Test func thePauseAfterLeadsThatRanOutOfTimeStartsAt10MillisecondsAndDoublesUpToASecond() {
            let pauses = (1...10).map { CurlTransport.leadPause(afterSlowLeads: $0) }
            #expect(
                pauses == [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000].map { Duration.milliseconds($0) })
        }

        /// Returns once no pause keeps callers from leading.
        private func untilLeadsMayStart(_ transport: CurlTransport) async throws {
            while try #require(transport.leadPauseRemaining) >= .zero {
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        @Test func anotherRequestTakesLibcurlFromALeadingCaller() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let finished = LockedOrder()
            try await withTransport(Self.longLead) { transport in
                let slow = Task {
                    let response = try await transport.send(taggedRequest(try server.url("/slow?delay=5"), tag: tag))
                    finished.append("slow")
                    return response.bodyText
                }
                try await server.waitForRequests(tag: tag)
                // The slow caller leads now, for up to 10 s; this request must not wait for it.
                let quick = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/quick")))
                finished.append("quick")
                #expect(quick.bodyText == "quick")
                #expect(try await slow.value == "slow")
            }
            #expect(finished.values == ["quick", "slow"])
        }

        @Test func aLeadingCallerCancelledThrowsAndTheTransportGoesOn() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            try await withTransport(Self.longLead) { transport in
                let task = Task { try await transport.send(taggedRequest(try server.url("/slow?delay=30"), tag: tag)) }
                try await server.waitForRequests(tag: tag)
                task.cancel()
                await #expect(throws: CancellationError.self) { try await task.value }
                let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/after")))
                #expect(response.bodyText == "after")
            }
        }

        @Test func aLeadingCallersTimeoutApplies() async throws {
            let server = try currentServer()
            try await withTransport(Self.longLead) { transport in
                let request = HTTPTransportRequest(url: try server.url("/slow?delay=5"), timeout: .milliseconds(300))
                await #expect(throws: HTTPTransportError.timeout) { try await transport.send(request) }
            }
        }

        @Test func shutdownEndsALeadingCallersRequest() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            let transport = CurlTransport(configuration: Self.longLead)
            let task = Task { try await transport.send(taggedRequest(try server.url("/hang"), tag: tag)) }
            try await server.waitForRequests(tag: tag)
            await transport.shutdown()
            await #expect(throws: HTTPTransportError.shutDown) { try await task.value }
        }

        @Test func manyCallersAtOnceEachGetTheirOwnAnswer() async throws {
            let server = try currentServer()
            try await withTransport(Self.longLead) { transport in
                for round in 0..<20 {
                    let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                        for index in 0..<8 {
                            let url = try server.url("/echo/\(round)-\(index)")
                            group.addTask { (index, try await transport.send(HTTPTransportRequest(url: url)).bodyText) }
                        }
                        return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
                    }
                    #expect(bodies == Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, "\(round)-\($0)") }))
                }
            }
        }

        // With one CPU, Swift's pool is one thread, as the executor here. A
        // caller that seems alone leads at once, but yields after eight leads
        // without a yield: a task made ready by its first request runs after
        // eight of its requests at most, not after all twenty.
        @Test func onOneCPUACallerYieldsToTheTasksReadyOnItsThreadAtLeastEveryEighthLead() async throws {
            let url = try currentServer().url("/echo/x")
            let order = try await withTransport(Self.longLead, allowedCPUs: 1) { transport in
                try await Self.order(ofRequests: 20, to: url, through: transport)
            }
            let other = try #require(order.firstIndex(of: "other"))
            #expect((1...8).contains(other), "the other task waited for \(other) requests")
            #expect(order.count == 21)
        }

        // The tasks that run while a caller yields before its lead send their
        // own requests, which cannot run while it drives: its lead starts them
        // with its own, and every caller on the one thread gets its own answer.
        @Test func onOneCPUCallersSharingOneThreadEachGetTheirOwnAnswer() async throws {
            let server = try currentServer()
            let executor = OneThreadExecutor()
            let ledAlong = try await withTransport(Self.longLead, allowedCPUs: 1) { transport in
                for round in 0..<20 {
                    let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                        for index in 0..<8 {
                            let url = try server.url("/echo/\(round)-\(index)")
                            group.addTask(executorPreference: executor) {
                                (index, try await transport.send(HTTPTransportRequest(url: url)).bodyText)
                            }
                        }
                        return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
                    }
                    #expect(bodies == Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, "\(round)-\($0)") }))
                }
                return transport.requestsStartedByOthersLeads
            }
            executor.stop()
            // Once a caller has yielded (after eight leads alone at most), each
            // round's first caller yields, the seven others queue, and it leads
            // all eight (unless the transport was busy when it claimed).
            #expect(ledAlong >= 7, "the requests queued while a caller yielded were not started by its lead")
        }

        // A request another caller's lead took along is its own caller's
        // still: cancelling it ends the lead (the transport thread takes the
        // rest over), its caller throws at once, and the leading caller still
        // gets its answer. A caller that seems alone leads without a yield,
        // and then nothing is taken along (each caller leads in turn); but
        // after eight leads without one a caller yields, so within five
        // attempts of two requests a lead takes the other request along.
        // Each attempt starts once the transport thread has removed the last
        // one's cancelled request: a caller that finds it still busy does not
        // lead, and when that caller is the one that yields (the fifth
        // attempt's first), no lead takes anything along (CI found it so once,
        // with the whole suite running).
        @Test func onOneCPUARequestLedAlongCanBeCancelledWithoutLosingTheLeadersAnswer() async throws {
            let server = try currentServer()
            let executor = OneThreadExecutor()
            defer { executor.stop() }
            try await withTransport(Self.longLead, allowedCPUs: 1) { transport in
                for attempt in 1...5 {
                    try await waitUntilIdle(transport)
                    let tag = uniqueTag()
                    let ledBefore = transport.requestsStartedByOthersLeads
                    // Both made on the executor's thread, so neither starts before both are queued.
                    let (leader, other) = await Task(executorPreference: executor) {
                        let leader = Task(executorPreference: executor) {
                            try await transport.send(HTTPTransportRequest(url: try server.url("/slow?delay=0.2")))
                        }
                        let other = Task(executorPreference: executor) {
                            try await transport.send(taggedRequest(try server.url("/slow?delay=30"), tag: tag))
                        }
                        return (leader, other)
                    }.value
                    try await server.waitForRequests(tag: tag)
                    let ledAlong = transport.requestsStartedByOthersLeads - ledBefore
                    other.cancel()
                    await #expect(throws: CancellationError.self) { try await other.value }
                    #expect(try await leader.value.bodyText == "slow")
                    if ledAlong == 1 { break }
                    #expect(attempt < 5, "no lead took the other request along in five attempts")
                }
            }
        }

        /// Waits (up to 5 s) until `transport`'s first thread has nothing in flight nor queued.
        private func waitUntilIdle(_ transport: CurlTransport) async throws {
            for _ in 0..<5000 where !transport.firstThreadIsIdle {
                try await Task.sleep(for: .milliseconds(1))
            }
            try #require(transport.firstThreadIsIdle, "the transport thread stayed busy")
        }

        @Test func aCallerWhoseRequestsAllCompleteWhileItLeadsStillLetsOtherTasksOnItsThreadRun() async throws {
            let url = try currentServer().url("/echo/x")
            let order = try await withTransport(Self.longLead) { transport in
                try await Self.order(ofRequests: 100, to: url, through: transport)
            }
            let other = try #require(order.firstIndex(of: "other"))
            #expect(other < 100, "the other task ran only after all of the sender's requests")
            #expect(order.count == 101)
        }

        /// A task on a one-thread executor sends `count` requests; after the
        /// first, another task on that executor becomes ready, queued behind
        /// the sender: it can run only when the sender suspends or yields.
        /// Returns the order of the answers ("request") and the other task ("other").
        private static func order(ofRequests count: Int, to url: URL, through transport: CurlTransport) async throws -> [String] {
            let executor = OneThreadExecutor()
            defer { executor.stop() }
            let order = LockedOrder()
            let sender = Task(executorPreference: executor) {
                var other: Task<Void, Never>?
                for index in 0..<count {
                    _ = try await transport.send(HTTPTransportRequest(url: url))
                    order.append("request")
                    if index == 0 {
                        other = Task(executorPreference: executor) { order.append("other") }
                    }
                }
                await other?.value
            }
            try await sender.value
            return order.values
        }
    }
}

/// The order in which tasks finished.
private final class LockedOrder: @unchecked Sendable {
    // @unchecked: `order` is only touched under `lock`.
    private let lock = NSLock()
    private var order: [String] = []

    func append(_ value: String) {
        lock.withLock { order.append(value) }
    }

    var values: [String] {
        lock.withLock { order }
    }
}

/// A `TaskExecutor` with one thread of its own: tasks that prefer it take turns
/// on that thread, as tasks do on Swift's pool when the process has one CPU.
private final class OneThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `stopped` are only touched under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    init() {
        let thread = Thread { [self] in run() }
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    func stop() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped {
                condition.wait()
            }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
