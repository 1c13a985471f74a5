#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The ordinary build's command line: run corpus files through their targets.
///
///     oauth2-fuzz replay [--corpus DIR] [TARGET...]   every file of DIR/<target>/ (default Fuzz/Corpus)
///     oauth2-fuzz run TARGET FILE...                  the given files (a libFuzzer artifact, say)
///     oauth2-fuzz list                                the targets
///
/// A property violation or a crash stops the process with the target's
/// message; the signal handler then names the file, so `make test` says
/// which corpus entry broke.
enum Replay {
    static func main(_ arguments: [String]) -> CInt {
        var arguments = arguments[...]
        switch arguments.popFirst() {
        case "list":
            for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
            return 0
        case "replay":
            var corpus = "Fuzz/Corpus"
            if arguments.first == "--corpus" {
                arguments.removeFirst()
                guard let directory = arguments.popFirst() else { return usage() }
                corpus = directory
            }
            return replay(corpus: corpus, names: Array(arguments))
        case "run":
            guard let name = arguments.popFirst(), let target = FuzzTarget.named(name), !arguments.isEmpty else { return usage() }
            for path in arguments { run(target, path: path) }
            print("oauth2-fuzz: \(arguments.count) file(s) pass \(target.name)")
            return 0
        default:
            return usage()
        }
    }

    private static func replay(corpus: String, names: [String]) -> CInt {
        let manager = FileManager.default
        // Every target has a corpus folder and every folder a target, so neither is forgotten.
        guard let folders = try? manager.contentsOfDirectory(atPath: corpus) else {
            printError("oauth2-fuzz: cannot read the corpus folder \(corpus)")
            return 1
        }
        let known = Set(FuzzTarget.all.map(\.name))
        let strays = Set(folders).subtracting(known).filter { !$0.hasPrefix(".") }
        let missing = known.subtracting(folders)
        guard strays.isEmpty, missing.isEmpty else {
            printError(
                "oauth2-fuzz: corpus folders without a target: \(strays.sorted()); targets without a corpus folder: \(missing.sorted())")
            return 1
        }
        var targets: [FuzzTarget] = []
        for name in names {
            guard let target = FuzzTarget.named(name) else { return usage() }
            targets.append(target)
        }
        if targets.isEmpty { targets = FuzzTarget.all }
        var total = 0
        let started = ContinuousClock.now
        for target in targets {
            let folder = "\(corpus)/\(target.name)"
            let files = ((try? manager.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
            for file in files { run(target, path: "\(folder)/\(file)") }
            total += files.count
        }
        print("oauth2-fuzz: replayed \(total) corpus files through \(targets.count) targets in \(started.duration(to: .now))")
        return 0
    }

    /// Runs one file, its path kept where the crash handler can print it.
    private static func run(_ target: FuzzTarget, path: String) {
        guard let data = FileManager.default.contents(atPath: path) else {
            printError("oauth2-fuzz: cannot read \(path)")
            exit(1)
        }
        CrashReport.current(path)
        data.withUnsafeBytes { target.run($0) }
        CrashReport.current(nil)
    }

    private static func usage() -> CInt {
        printError("usage: oauth2-fuzz replay [--corpus DIR] [TARGET...] | run TARGET FILE... | list")
        return 64
    }
}

private func printError(_ line: String) {
    FileHandle.standardError.write(Data("\(line)\n".utf8))
}

/// Names the corpus file being run when the process dies on it.
///
/// A trap cannot be caught in Swift; a signal handler that writes a
/// prepared C string (nothing that allocates) and dies again can tell.
enum CrashReport {
    nonisolated(unsafe) private static var line: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) private static var installed = false

    static func current(_ path: String?) {
        free(line)
        line = path.map { strdup("oauth2-fuzz: failed on \($0)\n") }
        guard !installed else { return }
        installed = true
        for signal in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            Glibc.signal(signal) { number in
                if let text = CrashReport.line { _ = write(2, text, strlen(text)) }
                Glibc.signal(number, SIG_DFL)
                raise(number)
            }
        }
    }
}
