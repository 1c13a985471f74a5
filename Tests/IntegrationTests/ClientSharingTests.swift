import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// Clients of one account, however they were made, refresh it once: their
/// shared transport counts the refresh grants (other suites refresh with the
/// same provider client meanwhile, so the provider's count is not this test's).
///
/// On the provider with hour-long tokens, the clients' clock moved past the
/// token's expiry: the refreshed token stays valid however long the burst
/// takes on a busy machine (with 2-second tokens, a burst slower than the
/// 1-second margin rightly refreshed a second time).
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it"))
struct ClientSharingTests {
    @Test func clientsOfOneAccountMadeByEveryInitializerRefreshOnceUnderConcurrentCallers() async throws {
        let provider = try Provider.main()
        let clock = ManualClock(Date())
        let cli = try CLI()
        let password = try provider.client("password")
        let configuration = try OAuth2Configuration(
            clientID: password.clientID,
            clientSecret: Secret(password.clientSecret),
            tokenEndpoint: try #require(URL(string: provider.endpoints.token)),
            allowsPasswordGrant: true
        )
        let transport = RecordingTransport()
        // Two providers of their own and a shared one, each with its own store value on one directory.
        let first = try OAuth2Provider(
            configuration: configuration, store: FileTokenStore(directory: cli.store), transport: transport, clock: clock
        ).client(account: "alice")
        let second = try OAuth2Provider(
            configuration: configuration, store: FileTokenStore(directory: cli.store), transport: transport, clock: clock
        ).client(account: "alice")
        let shared = try OAuth2Provider(
            configuration: configuration, store: FileTokenStore(directory: cli.store), transport: transport, clock: clock)
        let clients = [first, second, shared.client(account: "alice"), shared.client(account: "alice")]
        try await first.authenticate(.password(username: "alice", password: Secret(try provider.password(of: "alice"))))
        clock.advance(by: .seconds(3601))
        let api = try #require(URL(string: provider.endpoints.apiMe))

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<40 {
                let client = clients[index % clients.count]
                group.addTask { try await client.send(HTTPTransportRequest(url: api)).status.code }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(statuses.count == 40)
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(transport.refreshGrants == [.ok])
        await transport.inner.shutdown()
    }
}
