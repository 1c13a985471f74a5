#if canImport(Glibc)
import Glibc
#endif

// One executable, two builds. libFuzzer brings its own `main` and calls the
// two C entry points below, so the fuzzing build (`-DFUZZING`, see
// scripts/fuzz.sh) has no Swift entry point; the ordinary build (`swift
// build`, what `make test` runs) has one, which replays the corpus.

#if FUZZING

/// The target this process fuzzes, chosen once from `OAUTH2_FUZZ_TARGET`.
nonisolated(unsafe) private var selectedTarget: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
) -> CInt {
    let name = getenv("OAUTH2_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTarget.named(name) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: " ")
        let message = "oauth2-fuzz: set OAUTH2_FUZZ_TARGET to one of: \(names)\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
    selectedTarget = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    // The pointer may be null for an empty input.
    selectedTarget?.run(UnsafeRawBufferPointer(start: count > 0 ? data : nil, count: count))
    return 0
}

#else

@main
enum FuzzMain {
    static func main() {
        exit(Replay.main(Array(CommandLine.arguments.dropFirst())))
    }
}

#endif
