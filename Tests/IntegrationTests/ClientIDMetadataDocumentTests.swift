import Foundation
import OAuth2
import Testing

/// A ``ClientIDMetadataDocument`` served over https on 127.0.0.1 (a CA the
/// test makes, trusted through the provider's `/test/cimd-trust`) and taken
/// by django-oauth-toolkit as the client of an authorization request.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct ClientIDMetadataDocumentTests {
    static let callback = URL(string: "http://127.0.0.1:8765/callback")!

    /// Makes a CA and a certificate for 127.0.0.1 with openssl, then serves `<directory>/www` over https; prints the port.
    static let server = """
        import http.server, os, ssl, subprocess, sys
        os.chdir(sys.argv[1])
        def run(*a): subprocess.run(a, check=True, capture_output=True)
        run('openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key',
            '-out', 'ca.pem', '-days', '1', '-subj', '/CN=reg-it CA', '-addext', 'basicConstraints=critical,CA:TRUE',
            '-addext', 'keyUsage=critical,keyCertSign')
        run('openssl', 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'leaf.key',
            '-out', 'leaf.csr', '-subj', '/CN=127.0.0.1')
        open('ext', 'w').write('subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n')
        run('openssl', 'x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem',
            '-days', '1', '-extfile', 'ext')
        os.makedirs('www', exist_ok=True)
        os.chdir('www')
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *a): pass
        httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Quiet)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain('../leaf.pem', '../leaf.key')
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        print(httpd.server_address[1], flush=True)
        httpd.serve_forever()
        """

    @Test func theProviderTakesTheDocumentAsTheClient() async throws {
        let provider = try Provider.main()
        let environment = try #require(ProcessInfo.processInfo.environment["OAUTH2_IT_PROVIDER"])
        let env = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: environment))) as? [String: Any])
        let endpoints = try #require(env["endpoints"] as? [String: Any])
        let trust = try #require((endpoints["test_cimd_trust"] as? String).flatMap(URL.init(string:)))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reg-cimd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try Subprocess(
            "/usr/bin/python3", ["-c", Self.server, directory.path], environment: ProcessInfo.processInfo.environment)
        let port = try await server.firstLineOfStdout().trimmingCharacters(in: .whitespacesAndNewlines)

        let clientID = try #require(URL(string: "https://127.0.0.1:\(port)/client.json"))
        let document = try ClientIDMetadataDocument(
            clientID: clientID, metadata: ClientMetadata(redirectURIs: [Self.callback], clientName: "reg-it cimd"))
        try document.json().write(to: directory.appendingPathComponent("www/client.json"))

        let transport = CurlTransport()
        let ca = try Data(contentsOf: directory.appendingPathComponent("ca.pem"))
        let trusted = try await transport.send(HTTPTransportRequest(method: .post, url: trust, body: ca, redirects: .never))
        #expect(trusted.status.code == 200, "\(trusted.bodyText)")

        var components = try #require(URLComponents(string: provider.endpoints.authorize))
        components.queryItems = [
            URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: clientID.absoluteString),
            URLQueryItem(name: "redirect_uri", value: Self.callback.absoluteString), URLQueryItem(name: "state", value: "s"),
            URLQueryItem(name: "code_challenge", value: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
            URLQueryItem(name: "code_challenge_method", value: "S256"),
        ]
        // Signed in as alice, the document's client gets a code at its redirect URI, and the code a token.
        let redirect = try await provider.browse(try #require(components.url).absoluteString)
        #expect(redirect.hasPrefix(Self.callback.absoluteString + "?"), "\(redirect)")
        let code = try #require(URLComponents(string: redirect)?.queryItems?.first { $0.name == "code" }?.value)
        let form = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", Self.callback.absoluteString),
            ("client_id", clientID.absoluteString), ("code_verifier", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        ].map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
        let token = try await transport.send(
            HTTPTransportRequest(
                method: .post, url: try #require(URL(string: provider.endpoints.token)),
                headers: [.contentType: "application/x-www-form-urlencoded"], body: Data(form.utf8), redirects: .never))
        #expect(token.status.code == 200, "\(token.status.code)")
        #expect(token.bodyText.contains("access_token"))

        // A document that is not there is no client: the browser never comes back with a code.
        components.queryItems = components.queryItems?.map {
            $0.name == "client_id" ? URLQueryItem(name: "client_id", value: "https://127.0.0.1:\(port)/missing.json") : $0
        }
        let unknown = try? await provider.browse(try #require(components.url).absoluteString)
        #expect(unknown?.contains("code=") != true)

        _ = try await transport.send(HTTPTransportRequest(method: .delete, url: trust, redirects: .never))
        _ = try await server.killHard()
    }
}
