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

func nowNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}

func peakRSSKiB() -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmHWM:") {
            return Int(text.dropFirst(6).filter { $0.isNumber }) ?? 0
        }
    }
    return 0
}

func fail(_ message: String) -> Never {
    let line = "handoff-floor: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
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
let cpuStart = cpuSeconds()
let wallStart = nowNanoseconds()
guard let tokenPointer = floor_fetch_token(base) else { fail("no token") }
let token = String(cString: tokenPointer)
guard let enginePointer = floor_engine_start(min(concurrency, 64), done) else { fail("no engine") }
let engine = Handle(pointer: enginePointer)
var slots: [Handle] = []
for _ in 0..<concurrency {
    guard let slot = floor_slot_create(base, token) else { fail("no easy handle") }
    slots.append(Handle(pointer: slot))
}

let requestsStart = nowNanoseconds()
let (latencies, errors) = await withTaskGroup(of: ([UInt64], Int).self) { group in
    for caller in 0..<concurrency {
        let count = total / concurrency + (caller < total % concurrency ? 1 : 0)
        let slot = slots[caller]
        group.addTask {
            let waiter = Waiter()
            let context = Unmanaged.passUnretained(waiter).toOpaque()
            var latencies: [UInt64] = []
            latencies.reserveCapacity(count)
            var errors = 0
            for _ in 0..<count {
                let started = nowNanoseconds()
                let ok = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
                    waiter.continuation = continuation
                    floor_submit(engine.pointer, slot.pointer, context)
                }
                latencies.append(nowNanoseconds() - started)
                if !ok { errors += 1 }
            }
            withExtendedLifetime(waiter) {}
            return (latencies, errors)
        }
    }
    var all: [UInt64] = []
    var errors = 0
    for await (latencies, callerErrors) in group {
        all += latencies
        errors += callerErrors
    }
    return (all.sorted(), errors)
}
let wallEnd = nowNanoseconds()
let seconds = Double(wallEnd - requestsStart) / 1e9
let cpu = cpuSeconds() - cpuStart

func percentileMicroseconds(_ fraction: Double) -> Double {
    guard !latencies.isEmpty else { return 0 }
    return Double(latencies[min(latencies.count - 1, Int(Double(latencies.count - 1) * fraction))]) / 1000
}

func format(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (value * scale).rounded()
    let whole = Int(scaled / scale)
    let fraction = String(Int(scaled - Double(whole) * scale))
    return "\(whole)." + String(repeating: "0", count: max(0, digits - fraction.count)) + fraction
}

let fields: [(String, String)] = [
    ("scenario", sequential ? "\"sequential\"" : "\"concurrent\""),
    ("implementation", "\"handoff-floor\""),
    ("requests", "\(latencies.count)"),
    ("concurrency", "\(concurrency)"),
    ("errors", "\(errors)"),
    ("seconds", format(seconds, 6)),
    ("requests_per_second", format(Double(latencies.count) / seconds, 1)),
    ("p50_us", format(percentileMicroseconds(0.5), 1)),
    ("p99_us", format(percentileMicroseconds(0.99), 1)),
    ("cpu_seconds", format(cpu, 4)),
    ("peak_rss_kib", "\(peakRSSKiB())"),
    ("total_seconds", format(Double(wallEnd - wallStart) / 1e9, 6)),
]
print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
exit(errors == 0 ? 0 : 1)
