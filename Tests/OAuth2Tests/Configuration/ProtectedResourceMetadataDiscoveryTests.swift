import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// A protected resource metadata document naming `resource` and `servers`, with `extra` members.
private func document(_ resource: String, servers: [String] = ["https://as.example"], extra: String = "") -> String {
    let list = servers.map { "\"\($0)\"" }.joined(separator: ", ")
    return #"{"resource": "\#(resource)", "authorization_servers": [\#(list)]\#(extra.isEmpty ? "" : ", " + extra)}"#
}

private func url(_ text: String) -> URL { URL(string: text)! }

/// Fetches the metadata for `requested`, returning the error it throws.
private func failure(
    _ requested: String, metadataURL: String? = nil, rules: DiscoveryRules = DiscoveryRules(), transport: CannedTransport
) async -> OAuth2Error? {
    await #expect(throws: OAuth2Error.self) {
        _ = try await ProtectedResourceMetadata.fetch(
            for: url(requested), metadataURL: metadataURL.map(url), rules: rules, transport: transport
        )
    }
}

@Suite struct ProtectedResourceMetadataDiscoveryTests {
    // MARK: The MCP authorization spec's discovery order

    @Test func mcpDiscoveryUsesTheChallengesResourceMetadataURLWhenThereIsOne() async throws {
        let transport = CannedTransport()
        let metadataURL = url("https://mcp.example/meta/prm.json")
        transport.enqueue(json: document("https://mcp.example/mcp"), for: metadataURL)
        let rules = DiscoveryRules(maxDocumentSize: 4096, timeout: .seconds(7))
        let metadata = try await ProtectedResourceMetadata.fetch(
            for: url("https://mcp.example/mcp"), metadataURL: metadataURL, rules: rules, transport: transport
        )
        #expect(metadata.resource == "https://mcp.example/mcp")
        #expect(metadata.authorizationServers == ["https://as.example"])
        #expect(transport.requests.map(\.url) == [metadataURL])
        let request = try #require(transport.requests.first)
        #expect(request.method == .get)
        #expect(request.redirects == .never)
        #expect(request.maxResponseSize == 4096)
        #expect(request.timeout == .seconds(7))
    }

    @Test func mcpDiscoveryFallsBackToThePathInsertedWellKnownURIThenTheRoot() async throws {
        let transport = CannedTransport()
        let inserted = url("https://mcp.example/.well-known/oauth-protected-resource/api/mcp")
        let root = url("https://mcp.example/.well-known/oauth-protected-resource")
        transport.enqueue(json: #"{"error": "not_found"}"#, status: 404, for: inserted)
        transport.enqueue(json: document("https://mcp.example"), for: root)
        let metadata = try await ProtectedResourceMetadata.fetch(for: url("https://mcp.example/api/mcp"), transport: transport)
        #expect(metadata.resource == "https://mcp.example")
        #expect(transport.requests.map(\.url) == [inserted, root])
        #expect(transport.requests.allSatisfy { $0.redirects == .never })
    }

    @Test func mcpDiscoveryStopsAtThePathInsertedDocumentWhenItIsThere() async throws {
        let transport = CannedTransport()
        let inserted = url("https://mcp.example/.well-known/oauth-protected-resource/api/mcp")
        transport.enqueue(json: document("https://mcp.example/api/mcp"), for: inserted)
        _ = try await ProtectedResourceMetadata.fetch(for: url("https://mcp.example/api/mcp"), transport: transport)
        #expect(transport.requests.map(\.url) == [inserted])
    }

    @Test func theWellKnownURIDropsATrailingSlashAndTheRequestsQuery() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example:8443/api/mcp"))
        _ = try await ProtectedResourceMetadata.fetch(for: url("https://mcp.example:8443/api/mcp/?session=1#top"), transport: transport)
        #expect(transport.requests.map(\.url.absoluteString) == ["https://mcp.example:8443/.well-known/oauth-protected-resource/api/mcp"])
    }

    @Test(arguments: ["https://mcp.example", "https://mcp.example/"])
    func aURLWithoutAPathAsksTheRootOnly(requested: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: 404)
        let error = await failure(requested, transport: transport)
        #expect(error?.code == .httpError)
        #expect(error?.httpStatus == 404)
        #expect(transport.requests.map(\.url.absoluteString) == ["https://mcp.example/.well-known/oauth-protected-resource"])
    }

    @Test func aFailureOtherThanNotFoundIsThrownNotSkipped() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: 500)
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .httpError)
        #expect(error?.httpStatus == 500)
        #expect(transport.requests.count == 1)
    }

    @Test func aMissingDocumentAtTheChallengesURLIsThrownWithoutTryingTheWellKnownURIs() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: 404)
        let error = await failure("https://mcp.example/api", metadataURL: "https://mcp.example/prm", transport: transport)
        #expect(error?.httpStatus == 404)
        #expect(transport.requests.count == 1)
    }

    @Test func aPlainHTTPResourceThatIsNotLoopbackIsRefusedBeforeAnyFetch() async throws {
        let transport = CannedTransport()
        let error = await failure("http://mcp.example/api", transport: transport)
        #expect(error?.code == .insecureEndpoint)
        #expect(transport.requests.isEmpty)
    }

    // MARK: Hostile documents

    @Test(arguments: [
        "https://evil.example/.well-known/oauth-protected-resource", "https://mcp.example:8443/prm", "http://mcp.example/prm",
        "https://sub.mcp.example/prm", "https://127.0.0.1/prm", "file:///etc/passwd",
    ])
    func mcpDiscoveryRefusesAResourceMetadataURLOnAnotherOriginWithoutFetchingIt(metadataURL: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example/api"))
        let error = await failure("https://mcp.example/api", metadataURL: metadataURL, transport: transport)
        #expect(error?.code == .resourceMismatch)
        #expect(transport.requests.isEmpty)
    }

    @Test func aResourceMetadataURLOnTheSameOriginSpelledDifferentlyIsFetched() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example/api"))
        _ = try await ProtectedResourceMetadata.fetch(
            for: url("https://mcp.example/api"), metadataURL: url("HTTPS://MCP.example:443/prm"), transport: transport
        )
        #expect(transport.requests.count == 1)
    }

    @Test(arguments: [
        "https://evil.example/api", "https://mcp.example/other", "https://mcp.example/api/deeper", "https://mcp.example:8443/api",
        "http://mcp.example/api", "https://mcp.example/ap",
    ])
    func mcpDiscoveryRefusesMetadataNamingAnotherResource(resource: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document(resource))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .resourceMismatch)
    }

    @Test func mcpDiscoveryRefusesAnAuthorizationServerListWithOnlyPlainHTTP() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example/api", servers: ["http://as.example"]))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
        #expect(error?.message.contains("not loopback") == true)
    }

    @Test func aListWithSomeRefusedAuthorizationServersKeepsOnlyTheAllowedOnesInOrder() async throws {
        let transport = CannedTransport()
        let servers = [
            "http://as.example", "https://b.example", "https://10.0.0.1", "https://a.example", "https://b.example",
            "https://as.example/?q=1",
        ]
        transport.enqueue(json: document("https://mcp.example/api", servers: servers))
        let metadata = try await ProtectedResourceMetadata.fetch(for: url("https://mcp.example/api"), transport: transport)
        #expect(metadata.authorizationServers == ["https://b.example", "https://a.example"])
    }

    @Test(arguments: [
        "https://as.example?tenant=1", "https://as.example#x", "https://user@as.example", "as.example", "ftp://as.example",
        "https://", "https://as.example:99999",
    ])
    func anAuthorizationServerThatIsNoIssuerIdentifierIsRefused(server: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example/api", servers: [server]))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
    }

    /// The SSRF rule: a resource on a public host cannot send the client to an internal address.
    @Test(arguments: [
        "https://169.254.169.254", "https://10.0.0.1", "https://192.168.1.1/tenant", "https://127.0.0.1:8443", "https://localhost",
        "https://[::1]", "https://[fd00::1]", "https://[::ffff:127.0.0.1]", "https://127.1", "https://2130706433", "http://127.0.0.1:8000",
    ])
    func aPublicResourceCannotNameAnAuthorizationServerOnAnInternalAddress(server: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example/api", servers: [server]))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
        #expect(transport.requests.count == 1)
    }

    @Test func anAppMayAllowPrivateAuthorizationServersForAPublicResource() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example/api", servers: ["https://10.0.0.1", "https://[fd00::1]"]))
        let metadata = try await ProtectedResourceMetadata.fetch(
            for: url("https://mcp.example/api"), rules: DiscoveryRules(allowsPrivateAuthorizationServers: true), transport: transport
        )
        #expect(metadata.authorizationServers == ["https://10.0.0.1", "https://[fd00::1]"])
    }

    @Test func aResourceOnAPrivateAddressMayNameAnAuthorizationServerOnOne() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://10.0.0.5/api", servers: ["https://10.0.0.9", "https://as.example"]))
        let metadata = try await ProtectedResourceMetadata.fetch(for: url("https://10.0.0.5/api"), transport: transport)
        #expect(metadata.authorizationServers == ["https://10.0.0.9", "https://as.example"])
    }

    @Test func aLoopbackResourceMayNameAPlainHTTPLoopbackAuthorizationServer() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("http://127.0.0.1:8000", servers: ["http://127.0.0.1:8000", "http://localhost:9000/o"]))
        let metadata = try await ProtectedResourceMetadata.fetch(for: url("http://127.0.0.1:8000/res/a/hello"), transport: transport)
        #expect(metadata.authorizationServers == ["http://127.0.0.1:8000", "http://localhost:9000/o"])
    }

    @Test func aLoopbackResourceStillCannotNameAPlainHTTPServerElsewhere() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("http://127.0.0.1:8000", servers: ["http://as.example"]))
        let error = await failure("http://127.0.0.1:8000/res/a", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
    }

    @Test func aPrivateHTTPSResourceCannotNameAPlainHTTPLoopbackServer() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://10.0.0.5/api", servers: ["http://127.0.0.1:8000"]))
        let error = await failure("https://10.0.0.5/api", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
    }

    @Test func theAllowListKeepsOnlyTheIssuersItNamesExactly() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json: document("https://mcp.example/api", servers: ["https://evil.example", "https://as.example/", "https://as.example"]))
        let rules = DiscoveryRules(allowedAuthorizationServers: ["https://as.example"])
        let metadata = try await ProtectedResourceMetadata.fetch(for: url("https://mcp.example/api"), rules: rules, transport: transport)
        #expect(metadata.authorizationServers == ["https://as.example"])

        transport.enqueue(json: document("https://mcp.example/api", servers: ["https://evil.example"]))
        let error = await failure("https://mcp.example/api", rules: rules, transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
    }

    @Test func mcpDiscoveryRefusesAnOversizedDocument() async throws {
        let transport = CannedTransport()
        let padding = String(repeating: "x", count: 70 * 1024)
        transport.enqueue(json: document("https://mcp.example/api", extra: #""resource_name": "\#(padding)""#))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .responseTooLarge)
    }

    @Test func anOversizedBodyFromATransportThatIgnoresTheLimitIsRefusedToo() async throws {
        let response = HTTPTransportResponse(
            status: 200, headers: [.contentType: "application/json"], body: Data(repeating: 0x20, count: 2048))
        let error = #expect(throws: OAuth2Error.self) {
            _ = try ProtectedResourceMetadata.parse(
                response, requestedURL: url("https://mcp.example/api"), rules: DiscoveryRules(maxDocumentSize: 1024)
            )
        }
        #expect(error?.code == .responseTooLarge)
    }

    @Test(arguments: [301, 302, 307, 308])
    func mcpDiscoveryDoesNotFollowARedirectingDocument(status: Int) async throws {
        let transport = CannedTransport()
        let elsewhere = "https://10.0.0.1/.well-known/oauth-protected-resource"
        transport.enqueue(HTTPTransportResponse(status: .init(code: status), headers: [.location: elsewhere]))
        let error = await failure("https://mcp.example/api", metadataURL: "https://mcp.example/prm", transport: transport)
        #expect(error?.code == .unexpectedRedirect)
        #expect(transport.requests.count == 1)
    }

    @Test func aRedirectAtThePathInsertedURIIsNotTakenForAMissingDocument() async throws {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: 302, headers: [.location: "https://evil.example/prm"]))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .unexpectedRedirect)
        #expect(transport.requests.count == 1)
    }

    // MARK: The document's shape

    @Test(arguments: [
        "<html>not found</html>", "[]", #""https://mcp.example/api""#, "{", #"{"authorization_servers": ["https://as.example"]}"#,
        #"{"resource": 7, "authorization_servers": ["https://as.example"]}"#,
        #"{"resource": "https://mcp.example/api"}"#,
        #"{"resource": "https://mcp.example/api", "authorization_servers": []}"#,
        #"{"resource": "https://mcp.example/api", "authorization_servers": "https://as.example"}"#,
        #"{"resource": "https://mcp.example/api", "authorization_servers": [7]}"#,
        #"{"resource": "mcp", "authorization_servers": ["https://as.example"]}"#,
        #"{"resource": "https://mcp.example/api#frag", "authorization_servers": ["https://as.example"]}"#,
    ])
    func aDocumentWithoutAUsableResourceOrServerListIsInvalid(body: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: body)
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
    }

    @Test(arguments: [
        #""scopes_supported": "read""#, #""scopes_supported": [1]"#, #""bearer_methods_supported": {}"#,
        #""dpop_signing_alg_values_supported": "ES256""#, #""dpop_bound_access_tokens_required": "true""#,
        #""tls_client_certificate_bound_access_tokens": 1"#, #""resource_name": ["x"]"#,
    ])
    func aFieldOfTheWrongTypeIsInvalid(member: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document("https://mcp.example/api", extra: member))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
    }

    @Test func aFormEncodedBodyIsNotMetadata() async throws {
        let transport = CannedTransport()
        let body = Data("resource=https%3A%2F%2Fmcp.example%2Fapi&authorization_servers=https%3A%2F%2Fas.example".utf8)
        transport.enqueue(HTTPTransportResponse(status: 200, headers: [.contentType: "application/x-www-form-urlencoded"], body: body))
        let error = await failure("https://mcp.example/api", transport: transport)
        #expect(error?.code == .invalidResourceMetadata)
    }

    @Test func everyRFC9728FieldIsRead() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json: document(
                "https://mcp.example/api",
                extra: #"""
                    "scopes_supported": ["read", "write"], "bearer_methods_supported": ["header"],
                    "dpop_signing_alg_values_supported": ["ES256"], "dpop_bound_access_tokens_required": true,
                    "tls_client_certificate_bound_access_tokens": false, "resource_name": "Files\u001b[31m API",
                    "resource_documentation": "https://mcp.example/docs", "jwks_uri": null
                    """#
            ))
        let metadata = try await ProtectedResourceMetadata.fetch(for: url("https://mcp.example/api/tools"), transport: transport)
        #expect(metadata.scopesSupported == ["read", "write"])
        #expect(metadata.bearerMethodsSupported == ["header"])
        #expect(metadata.dpopSigningAlgValuesSupported == ["ES256"])
        #expect(metadata.dpopBoundAccessTokensRequired)
        #expect(!metadata.tlsClientCertificateBoundAccessTokens)
        #expect(metadata.resourceName == "Files[31m API")
    }

    // MARK: matches(resource:requestedURL:)

    @Test(arguments: [
        ("https://mcp.example/api", "https://mcp.example/api"),
        ("https://mcp.example", "https://mcp.example/api/mcp"),
        ("https://mcp.example/", "https://mcp.example/api"),
        ("https://mcp.example/api", "https://mcp.example/api/mcp"),
        ("https://mcp.example/api/", "https://mcp.example/api"),
        ("https://mcp.example/api", "https://mcp.example/api/"),
        ("https://mcp.example/api", "https://mcp.example/api?x=1#y"),
        ("HTTPS://MCP.Example/api", "https://mcp.example/api"),
        ("https://mcp.example:443/api", "https://mcp.example/api"),
        ("http://127.0.0.1:80", "http://127.0.0.1/res/a"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/res/a/hello"),
    ])
    func aResourceMatchesItselfAndURLsBelowItsPath(resource: String, requested: String) {
        #expect(ProtectedResourceMetadata.matches(resource: resource, requestedURL: url(requested)))
    }

    @Test(arguments: [
        ("https://mcp.example/api", "https://mcp.example/apix"),
        ("https://mcp.example/api/mcp", "https://mcp.example/api"),
        ("https://mcp.example/API", "https://mcp.example/api"),
        ("https://mcp.example/api", "https://evil.example/api"),
        ("https://mcp.example/api", "https://mcp.example.evil.example/api"),
        ("https://mcp.example/api", "http://mcp.example/api"),
        ("https://mcp.example:8443/api", "https://mcp.example/api"),
        ("https://mcp.example/api?x=1", "https://mcp.example/api?x=1"),
        ("https://mcp.example/api#x", "https://mcp.example/api"),
        ("https://user@mcp.example/api", "https://mcp.example/api"),
        ("https://mcp.example/api", "https://mcp.example/api/../admin"),
        ("https://mcp.example/api", "https://mcp.example/api/%2E%2E/admin"),
        ("https://mcp.example/api/..", "https://mcp.example/api/../x"),
        ("mcp.example/api", "https://mcp.example/api"),
        ("urn:example:api", "https://mcp.example/api"),
        ("", "https://mcp.example/api"),
    ])
    func aResourceDoesNotMatchAnythingLooser(resource: String, requested: String) {
        #expect(!ProtectedResourceMetadata.matches(resource: resource, requestedURL: url(requested)))
    }
}

@Suite struct AuthorizationServerDiscoveryForResourcesTests {
    private func asDocument(_ issuer: String) -> String {
        #"{"issuer": "\#(issuer)", "authorization_endpoint": "\#(issuer)/authorize", "token_endpoint": "\#(issuer)/token", "code_challenge_methods_supported": ["S256"]}"#
    }

    @Test func mcpDiscoveryOfAnIssuerWithAPathTriesRFC8414ThenOpenIDInsertedThenAppended() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: 404)
        transport.enqueue(json: "{}", status: 404)
        transport.enqueue(json: asDocument("https://as.example/tenant1"))
        let metadata = try await AuthorizationServerMetadata.discover(
            authorizationServer: "https://as.example/tenant1", transport: transport)
        #expect(metadata.tokenEndpoint == url("https://as.example/tenant1/token"))
        #expect(
            transport.requests.map(\.url.absoluteString) == [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ])
    }

    @Test(arguments: ["https://as.example", "https://as.example/"])
    func mcpDiscoveryOfAnIssuerWithoutAPathTriesRFC8414ThenOpenID(issuer: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: 404)
        transport.enqueue(json: asDocument(issuer))
        _ = try await AuthorizationServerMetadata.discover(authorizationServer: issuer, transport: transport)
        #expect(
            transport.requests.map(\.url.absoluteString) == [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ])
    }

    @Test func mcpDiscoveryStopsAtTheFirstDocumentFound() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: asDocument("https://as.example/tenant1"))
        _ = try await AuthorizationServerMetadata.discover(authorizationServer: "https://as.example/tenant1", transport: transport)
        #expect(transport.requests.count == 1)
    }

    @Test func mcpDiscoveryRefusesADocumentNamingAnotherIssuerWithoutTryingTheNext() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: asDocument("https://evil.example"))
        transport.enqueue(json: asDocument("https://as.example"))
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(authorizationServer: "https://as.example", transport: transport)
        }
        #expect(error?.code == .issuerMismatch)
        #expect(transport.requests.count == 1)
    }

    @Test func aFailureOtherThanNotFoundIsThrown() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: 503)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(authorizationServer: "https://as.example/t", transport: transport)
        }
        #expect(error?.httpStatus == 503)
        #expect(transport.requests.count == 1)
    }

    @Test func whenNoDocumentIsThereTheLastNotFoundIsThrown() async throws {
        let transport = CannedTransport()
        transport.respond { _ in HTTPTransportResponse(status: 404) }
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(authorizationServer: "https://as.example/t", transport: transport)
        }
        #expect(error?.code == .httpError)
        #expect(error?.httpStatus == 404)
        #expect(transport.requests.count == 3)
    }

    @Test func eachRequestIsHeldToTheRules() async throws {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: 302, headers: [.location: "https://evil.example/"]))
        let rules = DiscoveryRules(maxDocumentSize: 2048, timeout: .seconds(3))
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(
                authorizationServer: "https://as.example", rules: rules, transport: transport)
        }
        #expect(error?.code == .unexpectedRedirect)
        let request = try #require(transport.requests.first)
        #expect(request.redirects == .never)
        #expect(request.maxResponseSize == 2048)
        #expect(request.timeout == .seconds(3))
    }

    @Test func anIssuerOutsideTheAllowListIsNotFetched() async throws {
        let transport = CannedTransport()
        let rules = DiscoveryRules(allowedAuthorizationServers: ["https://as.example"])
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(
                authorizationServer: "https://evil.example", rules: rules, transport: transport)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(transport.requests.isEmpty)
    }

    /// The SSRF rule one step on: a public server cannot send the client to internal endpoints either.
    @Test(arguments: [
        #""token_endpoint": "https://169.254.169.254/token""#, #""registration_endpoint": "https://10.0.0.1/register""#,
        #""jwks_uri": "https://[::1]/jwks""#, #""userinfo_endpoint": "https://localhost/userinfo""#,
        #""revocation_endpoint": "https://127.1/revoke""#, #""mtls_endpoint_aliases": {"token_endpoint": "https://192.168.0.1/t"}"#,
    ])
    func aPublicServerNamingAnEndpointOnAnInternalAddressIsRefused(member: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"issuer": "https://as.example", \#(member)}"#)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(authorizationServer: "https://as.example", transport: transport)
        }
        #expect(error?.code == .insecureEndpoint)

        transport.enqueue(json: #"{"issuer": "https://as.example", \#(member)}"#)
        let rules = DiscoveryRules(allowsPrivateAuthorizationServers: true)
        _ = try await AuthorizationServerMetadata.discover(authorizationServer: "https://as.example", rules: rules, transport: transport)
    }

    @Test func aServerOnLoopbackMayNameEndpointsOnLoopback() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: asDocument("http://127.0.0.1:8000"))
        let metadata = try await AuthorizationServerMetadata.discover(authorizationServer: "http://127.0.0.1:8000", transport: transport)
        #expect(metadata.tokenEndpoint == url("http://127.0.0.1:8000/token"))
    }

    @Test func aPlainHTTPIssuerThatIsNotLoopbackIsRefused() async throws {
        let transport = CannedTransport()
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(authorizationServer: "http://as.example", transport: transport)
        }
        #expect(error?.code == .insecureEndpoint)
        #expect(transport.requests.isEmpty)
    }
}
