import ChildProcesses
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
    func hotPathsAllocateNoMoreThanTheirThresholds() async throws {
        let output = try await Gate.runOnAThreadOfItsOwn()
        #expect(
            output.asyncFramesCounted,
            "the child's async frames came from the task's slab: this Swift runtime ignores SWIFT_DEBUG_ENABLE_TASK_SLAB_ALLOCATOR=0, so the counts follow frame sizes"
        )
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
        /// Whether every async frame was an allocation of its own.
        let asyncFramesCounted: Bool
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

    /// The child's whole environment.
    ///
    /// Swift seeds its hashing per process, and a DPoP proof's JSON objects
    /// allocate by the order their keys hash in (647 to 659 per proof from
    /// run to run): a fixed seed makes every count the same in every run.
    ///
    /// Without the task slab allocator every async frame is a malloc of its
    /// own. With it, a task takes frames out of slabs and mallocs a new slab
    /// when the next frame does not fit, so the count followed the frame
    /// sizes of the debug build: a refresh counted 95 or 96 for the same
    /// work as one function or another on its path grew a few bytes. One
    /// allocation per frame moves only when the path makes a call more or less.
    static let environment = [
        "SWIFT_DETERMINISTIC_HASHING": "1",
        "SWIFT_DEBUG_ENABLE_TASK_SLAB_ALLOCATOR": "0",
    ]

    /// util-linux's taskset (Debian's util-linux is essential), which starts
    /// the child on one CPU.
    static let taskset = URL(fileURLWithPath: "/usr/bin/taskset")

    /// The first CPU this process may run on, to run the child on alone, or
    /// `nil` when that cannot be done (then the child runs on every CPU).
    ///
    /// On one CPU from its start, Swift's cooperative pool has one thread, so
    /// a refresh's tasks take turns instead of running side by side. Side by
    /// side, the lock holder's task sometimes still ends its work when the
    /// next refresh asks for the lock, which then waits: up to 0.43 of an
    /// allocation per refresh on two idle cores, in the least batch, near
    /// the half where rounding would count it; on one, 0 in most runs.
    static func oneCPU() -> String? {
        guard FileManager.default.isExecutableFile(atPath: taskset.path),
            let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return nil }
        let first = line.dropFirst("Cpus_allowed_list:".count).drop(while: { $0 == " " || $0 == "\t" }).prefix(while: \.isNumber)
        return first.isEmpty ? nil : String(first)
    }

    /// ``run(iterations:)``, whose reads and wait block for the child's
    /// whole run (about 15 s), on a thread of its own: on one of the
    /// cooperative pool's threads (two on a 2-core machine) it held up every
    /// other test of the process for that long.
    static func runOnAThreadOfItsOwn() async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try run() }) }
        }
    }

    static func run(iterations: Int = 1000) throws -> Output {
        let child = try binary()
        let (executable, arguments) =
            if let cpu = oneCPU() {
                (taskset.path, ["--cpu-list", cpu, child.path, String(iterations)])
            } else {
                (child.path, [String(iterations)])
            }
        // Nothing inherited: what the runtime and glibc read from the
        // environment (SWIFT_DEBUG_*, GLIBC_TUNABLES, LD_PRELOAD) would change
        // what is counted from one shell to another.
        let process = try ChildProcess(
            executable, arguments, environment: environment, directory: "/", stdout: .pipe, stderr: .pipe)
        let out = Data(try process.output?.readToEnd() ?? [])
        let err = Data(try process.errors?.readToEnd() ?? [])
        let ending = process.waitUntilExit()
        guard ending == .exited(0) else {
            throw Failure(
                description:
                    "AllocationGateChild ended with \(ending): \(String(decoding: out + err, as: UTF8.self))"
            )
        }
        return try JSONDecoder().decode(Output.self, from: out)
    }
}
