import BenchCore
import OAuth2

/// The command line: `oauth2-bench MODE [--option value]...`.
struct Arguments {
    static let usage = """
        usage: oauth2-bench MODE [options]
          sequential  --url BASE --requests N [--executor global|transport] [--auth bearer|dpop] [STORE]
          concurrent  --url BASE --requests N --concurrency C [--executor global|transport]
          storm       --url BASE --callers N [--token-log PATH]
          storm-seed  --url BASE STORE   (stores a fresh token for the storm across processes)
          storm-process --url BASE STORE [--callers N]
                      (prints "ready", waits for a line on stdin, then N sends on the expired token)
          parse       --iterations N
          dpop-proof  --iterations N   (one DPoP proof, ES256, for the resource GET; also in parse)
          overhead    --iterations N [--token-bytes N] [--auth bearer|dpop]   (send through a transport that answers at once;
                      an access token of N bytes instead of 18)
          memory      --url BASE --requests N --warmup N [--concurrency C]
          accounts    --sizes 1,1000,10000 --iterations N
                      (per-account memory and send time, in process, as accounts grow)
        --executor transport: the callers' tasks prefer CurlTransport.executor (default: global).
        --auth dpop: sequential and overhead with a DPoP-bound token, a proof on every GET (default: bearer).
        --layer transport: sequential and concurrent send a request signed once through
          CurlTransport.send itself, not OAuth2Client.send (default: client).
        --caller-driven-wait-us N: CurlTransport.Configuration.callerDrivenWait in µs
          (sequential and concurrent; default: the library's, 0: the caller never drives).
        --max-threads N: CurlTransport.Configuration.maxThreads (sequential and concurrent;
          default: the library's, 1: one thread drives libcurl).
        STORE: --store memory (default) | --store file --store-dir DIR
             | --store postgres --database-url URL --database-password-file PATH [--table NAME]
        Prints one JSON line per result.
        """

    let mode: String
    private var options: [String: String] = [:]

    init(_ arguments: [String]) throws(BenchError) {
        guard let mode = arguments.first else { throw BenchError(Self.usage) }
        self.mode = mode
        var rest = arguments.dropFirst()
        while let name = rest.popFirst() {
            guard name.hasPrefix("--"), let value = rest.popFirst() else {
                throw BenchError("expected --option value, got \(name)\n\(Self.usage)")
            }
            options[String(name.dropFirst(2))] = value
        }
    }

    func string(_ name: String) throws(BenchError) -> String {
        guard let value = options[name] else { throw BenchError("--\(name) is required\n\(Self.usage)") }
        return value
    }

    func optionalString(_ name: String) -> String? {
        options[name]
    }

    /// `--caller-driven-wait-us` and `--max-threads`: the transport's configuration.
    func transportConfiguration() throws(BenchError) -> CurlTransport.Configuration {
        var configuration = CurlTransport.Configuration()
        if let text = options["caller-driven-wait-us"] {
            guard let microseconds = Int(text), microseconds >= 0 else {
                throw BenchError("--caller-driven-wait-us must be a whole number of microseconds")
            }
            configuration.callerDrivenWait = .microseconds(microseconds)
        }
        if let text = options["max-threads"] {
            guard let threads = Int(text), threads >= 1 else {
                throw BenchError("--max-threads must be a positive whole number")
            }
            configuration.maxThreads = threads
        }
        return configuration
    }

    /// `--auth`: whether the sequential GETs present a bearer or a DPoP-bound token.
    func dpop() throws(BenchError) -> Bool {
        switch options["auth"] ?? "bearer" {
        case "bearer": return false
        case "dpop": return true
        default: throw BenchError("--auth must be bearer or dpop")
        }
    }

    /// `--layer`: what the callers send through.
    func layer() throws(BenchError) -> Layer {
        let text = options["layer"] ?? Layer.client.rawValue
        guard let layer = Layer(rawValue: text) else {
            throw BenchError("--layer must be client or transport")
        }
        return layer
    }

    /// `--executor`: where the callers' tasks run.
    func executor() throws(BenchError) -> CallerExecutor {
        let text = options["executor"] ?? CallerExecutor.global.rawValue
        guard let executor = CallerExecutor(rawValue: text) else {
            throw BenchError("--executor must be global or transport")
        }
        return executor
    }

    /// A comma-separated list of positive integers.
    func intList(_ name: String, default fallback: [Int]) throws(BenchError) -> [Int] {
        guard let text = options[name] else { return fallback }
        var values: [Int] = []
        for part in text.split(separator: ",") {
            guard let value = Int(part), value > 0 else { throw BenchError("--\(name) must be positive integers separated by commas") }
            values.append(value)
        }
        guard !values.isEmpty else { throw BenchError("--\(name) is empty") }
        return values
    }

    func int(_ name: String, default fallback: Int? = nil) throws(BenchError) -> Int {
        guard let text = options[name] else {
            guard let fallback else { throw BenchError("--\(name) is required\n\(Self.usage)") }
            return fallback
        }
        guard let value = Int(text), value > 0 else { throw BenchError("--\(name) must be a positive integer") }
        return value
    }
}
