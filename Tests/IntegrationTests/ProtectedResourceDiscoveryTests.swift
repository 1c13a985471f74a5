import Foundation
import OAuth2
import Testing

/// The resources of the local provider (Tests/Provider/README.md, "Clients
/// that configure themselves") as env.json lists them: only what discovery needs.
private struct Resources: Decodable {
    struct Resource: Decodable {
        let resource: String
        let hello: String
        let metadata: String
        let metadataMoved: String?

        enum CodingKeys: String, CodingKey {
            case resource, hello, metadata
            case metadataMoved = "metadata_moved"
        }
    }

    let issuer: String
    let endpoints: [String: String]
    let resources: [String: Resource]
    let hostile: [String: Resource]

    static func main() throws -> Resources {
        let path = try #require(ProcessInfo.processInfo.environment["OAUTH2_IT_PROVIDER"])
        return try JSONDecoder().decode(Resources.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    func resource(_ name: String) throws -> Resource { try #require(resources[name]) }
    func hostile(_ name: String) throws -> Resource { try #require(hostile[name]) }

    /// The URLs of the metadata and registration requests the provider has answered so far, in order.
    func discoveryRequests(_ transport: CurlTransport) async throws -> [String] {
        let text = try #require(endpoints["test_discovery_requests"])
        let url = try #require(URL(string: text))
        let response = try await transport.send(HTTPTransportRequest(url: url))
        let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        let requests = try #require(object["requests"] as? [[String: Any]])
        return requests.compactMap { $0["url"] as? String }
    }
}

private func url(_ text: String) throws -> URL { try #require(URL(string: text)) }

/// RFC 9728 and RFC 8414 discovery with the real ``CurlTransport`` against the
/// local provider's resources, good and hostile: what the library reads, and
/// what it refuses to fetch (the provider lists every metadata request it answered).
@Suite(
    .enabled(
        if: !(ProcessInfo.processInfo.environment["OAUTH2_IT_PROVIDER"] ?? "").isEmpty,
        "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct ProtectedResourceDiscoveryTests {
    /// The 401 an unsigned request to `endpoint` gets, and its Bearer challenge.
    private func challenge(_ endpoint: String, _ transport: CurlTransport) async throws -> BearerChallenge {
        let response = try await transport.send(HTTPTransportRequest(url: try url(endpoint)))
        #expect(response.status == 401)
        return try #require(BearerChallenge.parse(response.headers[values: .wwwAuthenticate]))
    }

    /// The resource's metadata, read from what its challenge names, as a client does.
    private func fetchFromChallenge(_ resource: Resources.Resource, _ transport: CurlTransport) async throws -> ProtectedResourceMetadata {
        let challenge = try await challenge(resource.hello, transport)
        let named = try #require(challenge.resourceMetadata)
        return try await ProtectedResourceMetadata.fetch(for: try url(resource.hello), metadataURL: try url(named), transport: transport)
    }

    /// The code of the error fetching the metadata its challenge names throws.
    private func refusal(_ resource: Resources.Resource, _ transport: CurlTransport) async throws -> OAuth2Error.Code? {
        do {
            _ = try await fetchFromChallenge(resource, transport)
            return nil
        } catch let error as OAuth2Error {
            return error.code
        }
    }

    @Test func mcpDiscoveryFromAChallengeToTheAuthorizationServersMetadata() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let a = try env.resource("a")

        let challenge = try await challenge(a.hello, transport)
        #expect(challenge.resourceMetadata == a.metadata)
        let before = try await env.discoveryRequests(transport).count
        let metadata = try await ProtectedResourceMetadata.fetch(
            for: try url(a.hello), metadataURL: try url(try #require(challenge.resourceMetadata)), transport: transport
        )
        #expect(metadata.resource == a.resource)
        #expect(metadata.authorizationServers == [env.issuer])
        #expect(metadata.scopesSupported.contains("read"))
        #expect(metadata.bearerMethodsSupported == ["header"])

        let server = try await AuthorizationServerMetadata.discover(authorizationServer: env.issuer, transport: transport)
        #expect(server.issuer == env.issuer)
        let registration = try url(try #require(env.endpoints["registration"]))
        #expect(server.registrationEndpoint == registration)
        #expect(server.clientIDMetadataDocumentSupported)
        #expect(server.codeChallengeMethodsSupported.contains("S256"))
        let asked = try await env.discoveryRequests(transport).dropFirst(before)
        #expect(asked.contains(a.metadata))
        #expect(asked.contains("\(env.issuer)/.well-known/oauth-authorization-server"))
    }

    @Test func theCacheReadsAResourcesMetadataOnceForEveryCallToIt() async throws {
        let env = try Resources.main()
        let transport = RecordingTransport()
        defer { Task { await transport.inner.shutdown() } }
        let a = try env.resource("a")
        let cache = ProtectedResourceMetadataCache(transport: transport)
        let first = try await cache.metadata(for: try url(a.hello), metadataURL: try url(a.metadata))
        let second = try await cache.metadata(for: try url(a.hello), metadataURL: try url(a.metadata))
        let third = try await cache.metadata(for: try url(a.hello))
        #expect(first.resource == a.resource)
        #expect(second == first && third == first)
        #expect(transport.requests.map(\.url.absoluteString) == [a.metadata])
    }

    @Test func mcpDiscoveryWithoutResourceMetadataInTheChallengeReadsThePathInsertedWellKnownURI() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let quiet = try env.resource("quiet")
        let quietChallenge = try await challenge(quiet.hello, transport)
        #expect(quietChallenge.resourceMetadata == nil)

        let metadata = try await ProtectedResourceMetadata.fetch(for: try url(quiet.resource), transport: transport)
        #expect(metadata.resource == quiet.resource)
        #expect(metadata.authorizationServers == [env.issuer])
    }

    @Test func mcpDiscoveryFallsBackToTheRootWellKnownURIWhenThePathHasNone() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let quiet = try env.resource("quiet")
        // /res/quiet/hello has no document of its own; the origin's names the origin.
        let metadata = try await ProtectedResourceMetadata.fetch(for: try url(quiet.hello), transport: transport)
        #expect(metadata.resource == env.issuer)
        let inserted = quiet.hello.replacingOccurrences(of: env.issuer, with: "\(env.issuer)/.well-known/oauth-protected-resource")
        let asked = try await env.discoveryRequests(transport)
        let root = try #require(env.endpoints["resource_metadata"])
        let lastInserted = try #require(asked.lastIndex(of: inserted))
        #expect(asked[lastInserted...].contains(root))
    }

    @Test func mcpDiscoveryRefusesAResourceMetadataURLOnAnotherOriginWithoutFetchingIt() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let otherOrigin = try env.hostile("other_origin")
        let before = try await env.discoveryRequests(transport).filter { $0 == otherOrigin.metadata }.count
        #expect(try await refusal(otherOrigin, transport) == .resourceMismatch)
        let after = try await env.discoveryRequests(transport).filter { $0 == otherOrigin.metadata }.count
        #expect(after == before)
    }

    @Test(arguments: ["wrong_resource", "foreign_resource", "not_a_path_prefix"])
    func mcpDiscoveryRefusesMetadataNamingAnotherResource(hostile: String) async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        #expect(try await refusal(try env.hostile(hostile), transport) == .resourceMismatch)
    }

    @Test func mcpDiscoveryRefusesAPlainHTTPAuthorizationServer() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        #expect(try await refusal(try env.hostile("http_as"), transport) == .invalidResourceMetadata)
    }

    @Test func mcpDiscoveryRefusesAnAuthorizationServerWhoseDocumentNamesAnotherIssuer() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let metadata = try await fetchFromChallenge(try env.hostile("issuer_mismatch"), transport)
        let issuer = try #require(metadata.authorizationServers.first)
        #expect(issuer == "\(env.issuer)/hostile/issuer-mismatch")
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(authorizationServer: issuer, transport: transport)
        }
        #expect(error?.code == .issuerMismatch)
    }

    @Test func mcpDiscoveryRefusesAnOversizedDocument() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        #expect(try await refusal(try env.hostile("oversized"), transport) == .responseTooLarge)
    }

    @Test func mcpDiscoveryDoesNotFollowARedirectingDocument() async throws {
        let env = try Resources.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let redirect = try env.hostile("redirect")
        let moved = try #require(redirect.metadataMoved)
        let before = try await env.discoveryRequests(transport).filter { $0 == moved }.count
        #expect(try await refusal(redirect, transport) == .unexpectedRedirect)
        let after = try await env.discoveryRequests(transport).filter { $0 == moved }.count
        #expect(after == before)
    }
}
