import Foundation
import Testing

/// The allocation gate: the heap allocations per operation of the hot paths
/// (a signed request, a token parse, a refresh, a transfer's preparation, a
/// DPoP proof)
/// stay at or under the thresholds committed beside this test
/// (AllocationThresholds.swift). Allocations, not time: they are the same in
/// every run, so a change that adds work to a hot path fails here, in
/// `make test`, instead of hiding in a benchmark's noise.
@Suite struct AllocationGateTests {
    @Test(.enabled(if: Gate.canCount, "this build cannot count allocations (a sanitizer owns malloc)"))
    func hotPathsAllocateNoMoreThanTheirThresholds() throws {
        let output = try Gate.run()
        #expect(Set(output.metrics.map(\.metric)) == Set(AllocationThresholds.perOperation.keys))
        for measurement in output.metrics {
            let perOperation = Double(measurement.allocations) / Double(measurement.operations)
            // Whole allocations: what thread timing adds stays well under a half.
            let count = Int(perOperation.rounded())
            guard let threshold = AllocationThresholds.perOperation[measurement.metric] else { continue }
            #expect(
                count <= threshold,
                """
                allocations per \(measurement.metric): \(Gate.format(perOperation)), over the threshold \
                \(threshold) (Tests/AllocationGateTests/AllocationThresholds.swift): \
                the change adds heap allocations to this hot path
                """
            )
            if count < threshold {
                // Not a failure: a gain. Lowering the threshold keeps it.
                print(
                    "AllocationGate: \(measurement.metric) makes \(Gate.format(perOperation)) allocations per operation, "
                        + "the threshold is \(threshold): lower it to keep the gain"
                )
            }
        }
    }
}

/// AllocationGateChild, run and read.
enum Gate {
    struct Measurement: Decodable {
        let metric: String
        let operations: Int
        let allocations: UInt64
        let bytes: UInt64
    }

    struct Output: Decodable {
        let counting: Bool
        let metrics: [Measurement]
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func format(_ value: Double) -> String {
        String(format: "%.2f", value)
    }

    /// Whether the child counts in this build: not under a sanitizer, whose
    /// runtime owns malloc.
    static var canCount: Bool {
        (try? run(iterations: 1).counting) ?? true
    }

    /// AllocationGateChild, in the directory of the test binary (the build's
    /// bin path): `swift build --build-tests` builds both.
    static func binary() throws -> URL {
        let tests = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        let child = tests.deletingLastPathComponent().appendingPathComponent("AllocationGateChild")
        guard FileManager.default.isExecutableFile(atPath: child.path) else {
            throw Failure(
                description:
                    "AllocationGateChild is not in \(child.deletingLastPathComponent().path), beside the test binary: build it with `swift build --build-tests`"
            )
        }
        return child
    }

    static func run(iterations: Int = 1000) throws -> Output {
        let process = Process()
        process.executableURL = try binary()
        process.arguments = [String(iterations)]
        // Swift seeds its hashing per process, and a DPoP proof's JSON objects
        // allocate by the order their keys hash in (647 to 659 per proof from
        // run to run): a fixed seed makes every count the same in every run.
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_DETERMINISTIC_HASHING": "1"]) { $1 }
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description:
                    "AllocationGateChild exited \(process.terminationStatus): \(String(decoding: out + err, as: UTF8.self))"
            )
        }
        return try JSONDecoder().decode(Output.self, from: out)
    }
}
