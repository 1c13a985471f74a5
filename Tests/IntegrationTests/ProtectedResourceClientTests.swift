import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// ``ProtectedResourceClient`` against the local provider's RFC 9728
/// resources (Tests/Provider/README.md, "The resources"): from a bare URL to
/// a signed answer, registering dynamically, the browser step played by
/// `provider-browser.sh`.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct ProtectedResourceClientTests {
    /// The resources' URLs from the provider's env.json.
    struct Resources: Decodable {
        struct Resource: Decodable {
            let resource: String
            let hello: String
            let admin: String
            let insufficientAlways: String
            let freshAuth: String

            enum CodingKeys: String, CodingKey {
                case resource, hello, admin
                case insufficientAlways = "insufficient_always"
                case freshAuth = "fresh_auth"
            }
        }

        let resources: [String: Resource]

        static func main() throws -> Resources {
            let path = try #require(ProcessInfo.processInfo.environment["OAUTH2_IT_PROVIDER"])
            return try JSONDecoder().decode(Resources.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        }

        func url(_ name: String, _ endpoint: KeyPath<Resource, String>) throws -> URL {
            let resource = try #require(resources[name])
            return try #require(URL(string: resource[keyPath: endpoint]))
        }
    }

    /// The browser: `provider-browser.sh` signs alice in and approves.
    struct Browser: AuthorizationRedirectHandler {
        let provider: Provider
        var redirectURI: URL { URL(string: "http://127.0.0.1:9/callback")! }

        func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
            do {
                let redirect = try await provider.browse(pending.url.absoluteString)
                return try #require(URL(string: redirect))
            } catch {
                throw OAuth2Error(code: .accessDenied, message: "the scripted browser failed: \(error)")
            }
        }
    }

    /// Counts what goes through, to tell a round trip to discovery from none.
    final class Counting: HTTPTransport {
        let inner: any HTTPTransport
        private let sent = LockedValue<[URL]>([])
        init(_ inner: any HTTPTransport) { self.inner = inner }
        var urls: [URL] { sent.withLock { $0 } }
        func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
            sent.withLock { $0.append(request.url) }
            return try await inner.send(request)
        }
    }

    private func client(
        _ provider: Provider, store: InMemoryTokenStore, transport: any HTTPTransport, options: ProtectedResourceClient.Options = .init()
    ) -> ProtectedResourceClient {
        ProtectedResourceClient(
            identity: ClientIdentity(
                registrationMetadata: ClientMetadata(
                    redirectURIs: [Browser(provider: provider).redirectURI], clientName: "swift-oauth2 tests")),
            redirectHandler: Browser(provider: provider), store: store, account: "alice", options: options, transport: transport)
    }

    @Test func aBareURLGivesASignedAnswerAfterOneSignInAndTheNextCallMakesNoRoundTrip() async throws {
        let provider = try Provider.main()
        let resources = try Resources.main()
        let curl = CurlTransport()
        defer { Task { await curl.shutdown() } }
        let store = InMemoryTokenStore()
        let first = Counting(curl)
        let response = try await client(provider, store: store, transport: first).send(
            HTTPTransportRequest(url: resources.url("a", \.hello)))
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(
            String(decoding: response.body, as: UTF8.self).contains("\"username\": \"alice\"")
                || String(decoding: response.body, as: UTF8.self).contains("\"username\":\"alice\""))
        #expect(first.urls.contains { $0.path.contains("/.well-known/oauth-protected-resource") })
        #expect(first.urls.contains { $0.absoluteString.hasSuffix("/o/register/") })

        let second = Counting(curl)
        let again = try await client(provider, store: store, transport: second).send(HTTPTransportRequest(url: resources.url("a", \.hello)))
        #expect(again.status == 200)
        #expect(second.urls == [try resources.url("a", \.hello)])
    }

    /// Concurrent first calls share one discovery and one registration. Counted
    /// on the client's own transport, as the provider's record also holds the
    /// registrations of tests running beside this one.
    @Test func concurrentFirstCallsDiscoverAndRegisterOnce() async throws {
        let provider = try Provider.main()
        let resources = try Resources.main()
        let curl = CurlTransport()
        defer { Task { await curl.shutdown() } }
        let counting = Counting(curl)
        let store = InMemoryTokenStore()
        let client = client(provider, store: store, transport: counting)
        let url = try resources.url("a", \.hello)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<3 {
                group.addTask { try await client.send(HTTPTransportRequest(url: url)).status.code }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == [200, 200, 200])
        #expect(counting.urls.filter { $0.absoluteString.hasSuffix("/o/register/") }.count == 1, "\(counting.urls)")
        #expect(counting.urls.filter { $0.path.contains("/.well-known/oauth-protected-resource") }.count == 1, "\(counting.urls)")
        // Every sign-in used the one registration, as the provider saw the code requests.
        let clientID = try #require(try await store.loadRegistration(issuer: provider.issuer)?.clientID)
        let codes = try await ProtectedResources.main().tokenRequests(clientID: clientID).filter { $0.grantType == "authorization_code" }
        #expect(codes.count == 3)
        #expect(codes.allSatisfy { $0.status == 200 })
    }

    @Test func twoResourcesGetTwoTokensEachSentWithItsResourceAndRefusedByTheOther() async throws {
        let provider = try Provider.main()
        let resources = try Resources.main()
        let curl = CurlTransport()
        defer { Task { await curl.shutdown() } }
        let store = InMemoryTokenStore()
        let client = client(provider, store: store, transport: curl)
        #expect(try await client.send(HTTPTransportRequest(url: resources.url("a", \.hello))).status == 200)
        #expect(try await client.send(HTTPTransportRequest(url: resources.url("b", \.hello))).status == 200)
        let issuer = provider.issuer
        let tokenA = try #require(
            try await store.load(
                account: ProtectedResourceClient.tokenAccount(
                    authorizationServer: issuer, resource: resources.url("a", \.resource).absoluteString, account: "alice")))
        let tokenB = try #require(
            try await store.load(
                account: ProtectedResourceClient.tokenAccount(
                    authorizationServer: issuer, resource: resources.url("b", \.resource).absoluteString, account: "alice")))
        #expect(tokenA.accessToken != tokenB.accessToken)
        // RFC 8707: every token request of this client named its resource, as the provider saw them.
        let clientID = try #require(try await store.loadRegistration(issuer: issuer)?.clientID)
        let log = try await curl.send(HTTPTransportRequest(url: try #require(URL(string: provider.endpoints.testTokenRequests))))
        let entries = try #require(try JSONSerialization.jsonObject(with: log.body) as? [String: Any])["requests"] as? [[String: Any]] ?? []
        let ours = entries.filter { $0["client_id"] as? String == clientID }
        #expect(ours.count == 2)
        #expect(
            ours.compactMap { $0["resource"] as? [String] }
                == [[try resources.url("a", \.resource).absoluteString], [try resources.url("b", \.resource).absoluteString]])
        // The library will not send one to the other…
        let local = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: curl, tokenSource: tokenA).send(HTTPTransportRequest(url: resources.url("b", \.hello)))
        }
        #expect(local?.code == .resourceMismatch)
        // …and the provider refuses it too (RFC 8707 audience), when sent by hand.
        let byHand = try await curl.send(
            HTTPTransportRequest(url: resources.url("b", \.hello), headers: [.authorization: "Bearer \(tokenA.accessToken.value)"]))
        #expect(byHand.status == 401)
    }

    @Test func insufficientScopeStepsUpOnceToAdmin() async throws {
        let provider = try Provider.main()
        let resources = try Resources.main()
        let curl = CurlTransport()
        defer { Task { await curl.shutdown() } }
        let client = client(provider, store: InMemoryTokenStore(), transport: curl)
        #expect(try await client.send(HTTPTransportRequest(url: resources.url("a", \.hello))).status == 200)
        let admin = try await client.send(HTTPTransportRequest(url: resources.url("a", \.admin)))
        #expect(admin.status == 200, "\(String(decoding: admin.body, as: UTF8.self))")
        let always = await #expect(throws: OAuth2Error.self) {
            _ = try await client.send(HTTPTransportRequest(url: resources.url("a", \.insufficientAlways)))
        }
        #expect(always?.code == .insufficientScope)
        #expect(always?.stepUp?.scopes.contains("admin") == true)
    }

    /// The provider names alice `sub` "1" in token responses for resources (the AT Protocol's shape).
    @Test func theExpectedSubjectIsKeptAndAnotherIsRefused() async throws {
        let provider = try Provider.main()
        let resources = try Resources.main()
        let curl = CurlTransport()
        defer { Task { await curl.shutdown() } }
        let alice = client(provider, store: InMemoryTokenStore(), transport: curl, options: .init(expectedSubject: "1"))
        #expect(try await alice.send(HTTPTransportRequest(url: resources.url("a", \.hello))).status == 200)
        let store = InMemoryTokenStore()
        let expectingBob = client(provider, store: store, transport: curl, options: .init(expectedSubject: "2"))
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await expectingBob.send(HTTPTransportRequest(url: resources.url("a", \.hello)))
        }
        #expect(error?.code == .subjectMismatch)
        let account = ProtectedResourceClient.tokenAccount(
            authorizationServer: provider.issuer, resource: try resources.url("a", \.resource).absoluteString, account: "alice")
        #expect(try await store.load(account: account) == nil)
    }

    /// RFC 9470: `max_age=0` is never met, so one re-authorization, then the typed error with what was asked.
    @Test func insufficientUserAuthenticationReauthorizesOnceThenReportsWhatWasAsked() async throws {
        let provider = try Provider.main()
        let resources = try Resources.main()
        let curl = CurlTransport()
        defer { Task { await curl.shutdown() } }
        let client = client(provider, store: InMemoryTokenStore(), transport: curl)
        var never = try #require(URLComponents(url: try resources.url("a", \.freshAuth), resolvingAgainstBaseURL: false))
        never.queryItems = [URLQueryItem(name: "max_age", value: "0")]
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await client.send(HTTPTransportRequest(url: try #require(never.url)))
        }
        #expect(error?.code == .insufficientUserAuthentication)
        #expect(error?.stepUp?.maxAge == .zero)
    }
}
