import BenchCore
import BenchReport
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The benchmark executable: one scenario per run, so each reports its own peak RSS.
@main
enum OAuth2Bench {
    static func main() async {
        do {
            let arguments = try Arguments(Array(CommandLine.arguments.dropFirst()))
            for report in try await run(arguments) {
                report.print()
            }
        } catch {
            ProcessMetrics.printError("oauth2-bench: \(error)")
            exit(1)
        }
    }

    /// Runs the scenario off the main actor: a send awaited on the main actor
    /// would hop back to the main thread after every request.
    @concurrent
    static func run(_ arguments: Arguments) async throws -> [Report] {
        switch arguments.mode {
        case "sequential":
            let target = try BenchTarget(baseURL: arguments.string("url"), dpop: arguments.dpop())
            return [
                try await RequestBenchmark.run(
                    target: target, requests: arguments.int("requests"), concurrency: 1, executor: arguments.executor(),
                    transportConfiguration: arguments.transportConfiguration(), store: BenchStore(arguments), layer: arguments.layer()
                )
            ]
        case "concurrent":
            let target = try BenchTarget(baseURL: arguments.string("url"))
            return [
                try await RequestBenchmark.run(
                    target: target, requests: arguments.int("requests"), concurrency: arguments.int("concurrency"),
                    executor: arguments.executor(), transportConfiguration: arguments.transportConfiguration(),
                    layer: arguments.layer()
                )
            ]
        case "storm":
            let target = try BenchTarget(baseURL: arguments.string("url"))
            return [
                try await RefreshStormBenchmark.run(
                    target: target, callers: arguments.int("callers", default: 1000), tokenLog: arguments.optionalString("token-log")
                )
            ]
        case "storm-seed":
            let target = try BenchTarget(baseURL: arguments.string("url"))
            try await ProcessStormBenchmark.seed(target: target, store: BenchStore(arguments))
            return []
        case "storm-process":
            let target = try BenchTarget(baseURL: arguments.string("url"))
            return [
                try await ProcessStormBenchmark.run(
                    target: target, store: BenchStore(arguments), callers: arguments.int("callers", default: 1)
                )
            ]
        case "parse":
            let target = try BenchTarget(baseURL: arguments.optionalString("url") ?? "http://127.0.0.1:1")
            return try await ParsingBenchmark.run(target: target, iterations: arguments.int("iterations", default: 200_000))
        case "dpop-proof":
            let target = try BenchTarget(baseURL: arguments.optionalString("url") ?? "http://127.0.0.1:1")
            return [try ParsingBenchmark.runDPoPProofs(target: target, iterations: arguments.int("iterations", default: 100_000))]
        case "overhead":
            let target = try BenchTarget(baseURL: arguments.optionalString("url") ?? "http://127.0.0.1:1", dpop: arguments.dpop())
            return [
                try await ClientOverheadBenchmark.run(
                    target: target, iterations: arguments.int("iterations", default: 1_000_000),
                    tokenBytes: arguments.optionalString("token-bytes") == nil ? nil : arguments.int("token-bytes")
                )
            ]
        case "accounts":
            let target = try BenchTarget(baseURL: arguments.optionalString("url") ?? "http://127.0.0.1:1")
            return try await AccountsBenchmark.run(
                target: target, sizes: arguments.intList("sizes", default: [1, 1000, 10_000]),
                iterations: arguments.int("iterations", default: 100_000)
            )
        case "memory":
            let target = try BenchTarget(baseURL: arguments.string("url"))
            return [
                try await MemoryBenchmark.run(
                    target: target,
                    requests: arguments.int("requests", default: 100_000),
                    warmup: arguments.int("warmup", default: 5_000),
                    concurrency: arguments.int("concurrency", default: 1)
                )
            ]
        default:
            throw BenchError(Arguments.usage)
        }
    }
}
