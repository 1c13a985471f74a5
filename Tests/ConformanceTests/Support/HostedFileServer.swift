import ChildProcesses
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
final class HostedFileServer: Sendable {
    let directory: URL
    let port: Int
    private let process: ChildProcess

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

    private init(directory: URL, port: Int, process: ChildProcess) {
        self.directory = directory
        self.port = port
        self.process = process
    }

    /// Starts a server with the conformance provider's Python.
    static func start(contentType: String = HostedRequestObject.mediaType) async throws -> HostedFileServer {
        guard let python = ProcessInfo.processInfo.environment[ConformanceProvider.pythonVariable] else {
            throw ConformanceProviderError.notConfigured
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rp-hosted-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = try ChildProcess(
            python, ["-c", script, directory.path, contentType], stdin: .pipe, stdout: .pipe)
        let line = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            Thread { continuation.resume(returning: (try? process.output?.readLine()) ?? "") }.start()
        }
        let words = line.split(whereSeparator: \.isWhitespace)
        guard words.count == 2, words[0] == "READY", let port = Int(words[1]) else {
            try? FileManager.default.removeItem(at: directory)
            throw ConformanceProviderError.didNotStart("the hosted file server: " + line)
        }
        return HostedFileServer(directory: directory, port: port, process: process)
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
        process.input?.close()
        process.send(SIGTERM)
        try? FileManager.default.removeItem(at: directory)
    }
}

extension TLSFiles {
    /// The static client's RSA key for request objects, PKCS#8 PEM, made by
    /// op.py at start; its public JWK is the client's registered `jwks`.
    var requestObjectKeyFile: String { folder + "/client-request-object.key" }
}
