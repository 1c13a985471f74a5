import Foundation
import OAuth2
import Testing

/// Clients of one account, however they were made, refresh it once: the
/// provider counts the refreshes.
@Suite(.enabled(if: Provider.rotatingAreConfigured, "needs the rotating providers: `make test` starts them"))
struct ClientSharingTests {
    @Test func clientsOfOneAccountMadeByEveryInitializerRefreshOnceUnderConcurrentCallers() async throws {
        let provider = try Provider.rotate()
        let cli = try CLI()
        let password = try provider.client("password")
        let configuration = try OAuth2Configuration(
            clientID: password.clientID,
            clientSecret: Secret(password.clientSecret),
            tokenEndpoint: try #require(URL(string: provider.endpoints.token)),
            allowsPasswordGrant: true
        )
        let transport = CurlTransport()
        // Each made its own way, each with its own store value on one directory.
        let first = try OAuth2Client(configuration: configuration, account: "alice", store: FileTokenStore(directory: cli.store), transport: transport)
        let second = try OAuth2Client(configuration: configuration, account: "alice", store: FileTokenStore(directory: cli.store), transport: transport)
        let shared = try OAuth2Provider(configuration: configuration, store: FileTokenStore(directory: cli.store), transport: transport)
        let clients = [first, second, shared.client(account: "alice"), shared.client(account: "alice")]
        try await first.authenticate(username: "alice", password: Secret(try provider.password(of: "alice")))
        try await Task.sleep(for: .milliseconds(2500))
        let before = try await provider.tokenRequests(client: "password").requests.filter { $0.grantType == "refresh_token" }.count
        let api = try #require(URL(string: provider.endpoints.apiMe))

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<40 {
                let client = clients[index % clients.count]
                group.addTask { try await client.send(HTTPRequest(url: api)).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(statuses.count == 40)
        #expect(statuses.allSatisfy { $0 == 200 })
        let refreshes = try await provider.tokenRequests(client: "password").requests.filter { $0.grantType == "refresh_token" }.dropFirst(before)
        #expect(refreshes.count == 1, "\(refreshes.map { "\($0.status) \($0.error ?? "")" })")
        await transport.shutdown()
    }
}
