import Foundation
import OAuth2
import Testing

/// What the relying party hosts for the provider to fetch (request objects by
/// reference, RFC 9101 §5.2), served from a temporary directory by Python's
/// `http.server` on 127.0.0.1: a web server independent of the library and of
/// op.py, so that op.py really fetches the `request_uri` over HTTP.
///
/// Started without blocking a thread of the cooperative pool (the first line
/// is read by a thread of its own); it exits when ``stop()`` closes its stdin,
/// or with the test process.
final class HostedFileServer: @unchecked Sendable {
    // @unchecked: every property is set once in `init`; `stop()` only closes
    // the pipe and ends the process, which Process allows from any thread.
    let directory: URL
    let port: Int
    private let process: Process
    private let input: Pipe

    /// Serves the current directory (argv[1]); a file without an extension
    /// (a request object's random name) with the type in argv[2], as the app
    /// would serve a ``HostedRequestObject`` with its ``HostedRequestObject/contentType``.
    private static let script = """
        import http.server, os, sys, threading
        os.chdir(sys.argv[1])
        class Handler(http.server.SimpleHTTPRequestHandler):
            extensions_map = {"": sys.argv[2]}
            def log_message(self, *args): pass
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        print("READY %d" % httpd.server_address[1], flush=True)
        sys.stdin.read()
        httpd.shutdown()
        """

    private init(directory: URL, port: Int, process: Process, input: Pipe) {
        self.directory = directory
        self.port = port
        self.process = process
        self.input = input
    }

    /// Starts a server with the conformance provider's Python.
    static func start(contentType: String = HostedRequestObject.mediaType) async throws -> HostedFileServer {
        guard let python = ProcessInfo.processInfo.environment[ConformanceProvider.pythonVariable] else {
            throw ConformanceProviderError.notConfigured
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rp-hosted-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script, directory.path, contentType]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let reader = output.fileHandleForReading
        let line = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            Thread {
                var line = Data()
                while !line.contains(UInt8(ascii: "\n")) {
                    let more = reader.availableData
                    if more.isEmpty { break }
                    line.append(more)
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }.start()
        }
        let words = line.split(whereSeparator: \.isWhitespace)
        guard words.count == 2, words[0] == "READY", let port = Int(words[1]) else {
            try? input.fileHandleForWriting.close()
            process.terminate()
            try? FileManager.default.removeItem(at: directory)
            throw ConformanceProviderError.didNotStart("the hosted file server: " + line)
        }
        return HostedFileServer(directory: directory, port: port, process: process, input: input)
    }

    /// The URL of the directory `path` on this server (where the app's route would be).
    func baseURL(_ path: String) throws -> URL {
        try #require(URL(string: "http://127.0.0.1:\(port)/\(path)"))
    }

    /// Puts the object where its URL points on this server.
    func serve(_ object: HostedRequestObject) throws {
        let file = directory.appendingPathComponent(String(object.url.path.dropFirst()))
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(object.jwt.utf8).write(to: file)
    }

    /// Ends the server and removes its files.
    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }
}

extension TLSFiles {
    /// The static client's RSA key for request objects, PKCS#8 PEM, made by
    /// op.py at start; its public JWK is the client's registered `jwks`.
    var requestObjectKeyFile: String { folder + "/client-request-object.key" }
}
