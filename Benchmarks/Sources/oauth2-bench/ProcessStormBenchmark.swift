#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import BenchCore
import BenchReport
import OAuth2

/// The refresh storm across processes (issue 12): Benchmarks/bench.py seeds
/// the store with a token (`storm-seed`), then starts N `storm-process`es on
/// that store. Each has its own provider and client, its clock two hours
/// ahead (the stored token expired), prints `ready` and waits for a line on
/// stdin, so that all start together; then `callers` concurrent sends. The
/// store's account lock must let one process refresh and the others read
/// its token: bench.py counts the token requests in nginx's token log.
enum ProcessStormBenchmark {
    static let account = "storm"

    /// Stores a fresh token (client credentials, valid one hour) for ``account``.
    static func seed(target: BenchTarget, store: BenchStore) async throws {
        try await store.with(configuration: target.configuration()) { tokenStore in
            let transport = CurlTransport()
            do {
                _ = try await target.provider(transport: transport, store: tokenStore).client(account: account)
                    .authenticate(.clientCredentials)
            } catch {
                await transport.shutdown()
                throw error
            }
            await transport.shutdown()
        }
    }

    static func run(target: BenchTarget, store: BenchStore, callers: Int) async throws -> Report {
        try await store.with(configuration: target.configuration()) { tokenStore in
            let cpuStart = ProcessMetrics.cpuSeconds()
            let transport = CurlTransport()
            let clock = BenchClock()
            clock.advance(bySeconds: 2 * 3600)
            let client = try target.provider(transport: transport, clock: clock, store: tokenStore).client(account: account)
            // Connect to the database (or open the directory) before the start.
            guard try await tokenStore.load(account: account) != nil else {
                await transport.shutdown()
                throw BenchError("no token stored for the storm: run storm-seed first")
            }
            print("ready")
            fflush(nil) // every stream: `stdout` itself is shared mutable state to Swift 6
            _ = readLine()

            let start = ProcessMetrics.nanoseconds()
            let (latencies, errors) = try await RefreshStormBenchmark.storm(
                client: client, request: target.resourceRequest, callers: callers, start: start
            )
            let end = ProcessMetrics.nanoseconds()
            await transport.shutdown()
            return Report(
                scenario: "process-storm" + store.suffix,
                requests: callers,
                concurrency: callers,
                errors: errors,
                seconds: Double(end - start) / 1e9,
                latencies: latencies,
                cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart,
                // CLOCK_MONOTONIC is the machine's: bench.py compares it with its own start signal.
                extra: [("started_us", Double(start / 1000)), ("finished_us", Double(end / 1000))]
            )
        }
    }
}
