import Foundation
import OAuth2
import Testing

extension OIDCCClientDynamicTests {
    /// The key id op.py registered the static client's request object key under.
    static let requestObjectKeyID = "oidf-rp-request-object"

    /// "The client is expected to pass a request object by reference (and
    /// complete the entire flow), using the request_uri parameter. The
    /// request object must be signed using 'RS256' algorithm." The library
    /// signs the request with the client's registered RS256 key and picks the
    /// URL; the app (here a separate static server) serves it there; op.py
    /// fetches it, checks the signature, that the query's `response_type`,
    /// `client_id` and `scope` (with `openid`, Core §6.2) are the object's,
    /// and signs the user in with the object's parameters; the code exchange
    /// and the ID token (its `nonce` the object's) complete the flow.
    @Test("oidcc-client-test-request-uri-signed-rs256") func theRequestObjectIsPassedByReference() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-request-uri-signed-rs256")
        let server = try await HostedFileServer.start()
        defer { server.stop() }
        var configuration = try await run.discover()
        let pem = try String(contentsOfFile: run.tls.requestObjectKeyFile, encoding: .utf8)
        configuration.clientAssertionKey = try JWTSigningKey.rsa(pem: pem, algorithm: .rs256, keyID: Self.requestObjectKeyID)
        let provider = try await run.provider(configuration)

        let (pending, object) = try provider.authorizationURL(
            redirectURI: ModuleRun.redirectURI, scopes: ["openid", "email"],
            hostingRequestObjectUnder: try server.baseURL("request-objects"))
        try server.serve(object)
        let browser = try await ModuleRun.transport.send(HTTPTransportRequest(url: pending.url, redirects: .never))
        guard browser.status.kind == .redirection, let location = browser.headers[.location] else {
            throw ConformanceProviderError.noRedirect(status: browser.status.code)
        }
        let token = try await provider.token(for: .authorizationCode(redirect: location, pending: pending))
        #expect(token.idToken?.subject == "user-subject-1234531")
        let client = provider.client(account: "user")
        _ = try await client.adopt(token)
        #expect(try await client.userInfo().email == "user@example.com")

        let fetched = try #require(try await run.log().first { $0.event == "request_object" })
        #expect(fetched["refused"] == nil)
        #expect(fetched["request_uri"] as? String == object.url.absoluteString)
        #expect(fetched["content_type"] as? String == "application/oauth-authz-req+jwt")
        #expect(fetched["alg"] as? String == "RS256" && fetched["kid"] as? String == Self.requestObjectKeyID)
        #expect(fetched["typ"] as? String == "oauth-authz-req+jwt")
        #expect(fetched["iss_is_client"] as? Bool == true && fetched["aud_is_issuer"] as? Bool == true)
        #expect(fetched["query"] as? [String] == ["client_id", "request_uri", "response_type", "scope"])
        #expect(fetched["differing"] as? [String] == [], "every query parameter is the object's")
        #expect(fetched["has_request_or_request_uri"] as? Bool == false)
        let authorization = try #require(try await run.log().first { $0.event == "authorization" })
        #expect(authorization["nonce"] as? Bool == true && authorization["scope"] as? String == "openid email")
        #expect(try await run.calls() == ["discovery", "request_object", "authorization", "token", "jwks", "userinfo"])
    }
}
