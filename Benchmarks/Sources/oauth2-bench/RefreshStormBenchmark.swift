import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Scenario 3: `callers` concurrent `send` calls on an expired token.
///
/// The client gets a token by client credentials (valid for an hour, with a
/// refresh token), then its clock jumps two hours ahead: every caller finds
/// the token expired at once. Refresh must be single-flight: the server must
/// see one token request, however many callers. The count comes from nginx's
/// token log (`tokenLog`), read just before and just after the storm.
enum RefreshStormBenchmark {
    static func run(target: BenchTarget, callers: Int, tokenLog: String?) async throws -> Report {
        let cpuStart = ProcessMetrics.cpuSeconds()
        let transport = CurlTransport()
        let clock = BenchClock()
        let client = try target.provider(transport: transport, clock: clock).client(account: "storm")
        _ = try await client.authenticateWithClientCredentials()
        clock.advance(bySeconds: 2 * 3600)

        let request = target.resourceRequest
        let before = tokenLog.map(countLines)
        let start = ProcessMetrics.nanoseconds()
        var latencies = Latencies(capacity: callers)
        var errors = 0
        try await withThrowingTaskGroup(of: (UInt64, Int).self) { group in
            for _ in 0..<callers {
                group.addTask {
                    let response = try await client.send(request)
                    return (ProcessMetrics.nanoseconds() - start, response.status == 200 ? 0 : 1)
                }
            }
            for try await (latency, failed) in group {
                latencies.record(latency)
                errors += failed
            }
        }
        let seconds = Double(ProcessMetrics.nanoseconds() - start) / 1e9
        let after = tokenLog.map(countLines)
        await transport.shutdown()

        var extra: [(String, Double)] = []
        if let before, let after {
            extra.append(("token_requests", Double(after - before)))
        }
        return Report(
            scenario: "refresh-storm",
            requests: callers,
            concurrency: callers,
            errors: errors,
            seconds: seconds,
            latencies: latencies,
            cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart,
            extra: extra
        )
    }

    /// Lines in a file (nginx writes one per token request), 0 when it cannot be read.
    static func countLines(_ path: String) -> Int {
        guard let file = fopen(path, "r") else { return 0 }
        defer { fclose(file) }
        var count = 0
        while true {
            let character = getc(file)
            if character == EOF { break }
            if character == 0x0A { count += 1 }
        }
        return count
    }
}
