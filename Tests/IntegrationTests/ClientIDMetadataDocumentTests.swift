import Foundation
import OAuth2
import Testing

/// A ``ClientIDMetadataDocument`` served over https on 127.0.0.1 (a CA the
/// test makes, trusted through the provider's `/test/cimd-trust`) and taken
/// by django-oauth-toolkit as the client of an authorization request.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct ClientIDMetadataDocumentTests {
    static let callback = URL(string: "http://127.0.0.1:8765/callback")!

    @Test func theProviderTakesTheDocumentAsTheClient() async throws {
        let provider = try Provider.main()
        let environment = try #require(ProcessInfo.processInfo.environment["OAUTH2_IT_PROVIDER"])
        let env = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: environment))) as? [String: Any])
        let endpoints = try #require(env["endpoints"] as? [String: Any])
        let trust = try #require((endpoints["test_cimd_trust"] as? String).flatMap(URL.init(string:)))

        let server = try await ClientMetadataDocumentServer.start()
        let clientID = try #require(URL(string: server.url("client.json")))
        let document = try ClientIDMetadataDocument(
            clientID: clientID, metadata: ClientMetadata(redirectURIs: [Self.callback], clientName: "reg-it cimd"))
        try server.serve(try document.json(), as: "client.json")

        let transport = CurlTransport()
        let trusted = try await transport.send(HTTPTransportRequest(method: .post, url: trust, body: server.caPEM, redirects: .never))
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
            $0.name == "client_id" ? URLQueryItem(name: "client_id", value: server.url("missing.json")) : $0
        }
        let unknown = try? await provider.browse(try #require(components.url).absoluteString)
        #expect(unknown?.contains("code=") != true)

        // The CA stays trusted: DELETE /test/cimd-trust forgets every test's CA,
        // and other tests running now rely on theirs (this one's is thrown away
        // with the server, and the provider keeps at most 256).
        await server.stop()
    }
}
