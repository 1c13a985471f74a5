// The hand-off floor (issue 15): what a Swift program pays, with callers on
// Swift's default executor, to hand each request to a libcurl thread and be
// resumed with its answer, when it does nothing else.
//
//   handoff-floor sequential BASE_URL N
//   handoff-floor concurrent BASE_URL N C
//
// The libcurl side is the C baseline's loop on a thread of its own
// (Sources/CHandoffFloor): one easy handle per caller, set up once, the body
// discarded, the status checked. Each caller is a task of a task group on the
// global executor; per request it suspends on a continuation that the libcurl
// thread resumes. No OAuth2, no request building, no header parsing: the
// distance from this program to the C baseline is the hand-off, which any
// library built this way pays; the distance from swift-oauth2 to this program
// is ours. Prints the baseline's JSON line.
import BenchReport
import CHandoffFloor

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One caller's suspended request, handed through the C engine as its context.
final class Waiter {
    var continuation: UnsafeContinuation<Bool, Never>?
}

/// Called by the engine thread for every finished transfer.
let done: floor_done = { context, ok in
    guard let context else { return }
    let waiter = Unmanaged<Waiter>.fromOpaque(context).takeUnretainedValue()
    let continuation = waiter.continuation
    waiter.continuation = nil
    continuation?.resume(returning: ok != 0)
}

/// The engine and slot pointers cross into tasks: the C side owns their safety (a mutex).
struct Handle: @unchecked Sendable {
    let pointer: OpaquePointer
}

func fail(_ message: String) -> Never {
    ProcessMetrics.printError("handoff-floor: \(message)")
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, let total = Int(arguments[3]), total > 0,
    arguments[1] == "sequential" || arguments[1] == "concurrent"
else {
    fail("usage: handoff-floor sequential|concurrent BASE_URL N [C]")
}
let sequential = arguments[1] == "sequential"
let concurrency = sequential ? 1 : (arguments.count > 4 ? Int(arguments[4]) ?? 0 : 1)
guard concurrency > 0 else { fail("bad concurrency") }
let base = arguments[2]

floor_global_init()
let cpuStart = ProcessMetrics.cpuSeconds()
let wallStart = ProcessMetrics.nanoseconds()
guard let tokenPointer = floor_fetch_token(base) else { fail("no token") }
let token = String(cString: tokenPointer)
guard let enginePointer = floor_engine_start(min(concurrency, 64), done) else { fail("no engine") }
let engine = Handle(pointer: enginePointer)
var slots: [Handle] = []
for _ in 0..<concurrency {
    guard let slot = floor_slot_create(base, token) else { fail("no easy handle") }
    slots.append(Handle(pointer: slot))
}

let requestsStart = ProcessMetrics.nanoseconds()
let (latencies, errors) = await withTaskGroup(of: (Latencies, Int).self) { group in
    for caller in 0..<concurrency {
        let count = total / concurrency + (caller < total % concurrency ? 1 : 0)
        let slot = slots[caller]
        group.addTask {
            let waiter = Waiter()
            let context = Unmanaged.passUnretained(waiter).toOpaque()
            var latencies = Latencies(capacity: count)
            var errors = 0
            for _ in 0..<count {
                let started = ProcessMetrics.nanoseconds()
                let ok = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
                    waiter.continuation = continuation
                    floor_submit(engine.pointer, slot.pointer, context)
                }
                latencies.record(ProcessMetrics.nanoseconds() - started)
                if !ok { errors += 1 }
            }
            withExtendedLifetime(waiter) {}
            return (latencies, errors)
        }
    }
    var all = Latencies(capacity: total)
    var errors = 0
    for await (latencies, callerErrors) in group {
        all.merge(latencies)
        errors += callerErrors
    }
    return (all, errors)
}
let wallEnd = ProcessMetrics.nanoseconds()

Report(
    scenario: sequential ? "sequential" : "concurrent", implementation: "handoff-floor", requests: latencies.samples.count,
    concurrency: concurrency, errors: errors, seconds: Double(wallEnd - requestsStart) / 1e9, latencies: latencies,
    cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart, extra: [("total_seconds", Double(wallEnd - wallStart) / 1e9)]
).print()
exit(errors == 0 ? 0 : 1)
