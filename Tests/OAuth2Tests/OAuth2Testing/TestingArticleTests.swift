// The code of the article "Testing with OAuth2Testing"
// (Sources/OAuth2/OAuth2.docc/TestingWithOAuth2Testing.md), verbatim: when
// the API changes, this file stops building and the article needs the same
// change.
import Foundation
import OAuth2
import OAuth2Testing
import Testing

let tokenURL = URL(string: "https://idp.example/token")!
let deviceURL = URL(string: "https://idp.example/device")!
let apiURL = URL(string: "https://api.example/me")!

func makeProvider(store: InMemoryTokenStore, transport: CannedTransport, clock: ManualClock) throws -> OAuth2Provider {
    let configuration = try OAuth2Configuration(
        clientID: "my-app",
        clientSecret: .opaque("test-secret"),
        tokenEndpoint: tokenURL,
        deviceAuthorizationEndpoint: deviceURL
    )
    return try OAuth2Provider(configuration: configuration, store: store, transport: transport, clock: clock)
}

@Test func refreshesAnExpiredTokenOnceForConcurrentRequests() async throws {
    let clock = ManualClock()
    let transport = CannedTransport()
    let store = InMemoryTokenStore(tokens: [
        "alice": AccessToken(accessToken: Secret("old"), expiresAt: clock.now().addingTimeInterval(3600), refreshToken: Secret("r1"))
    ])
    let client = try makeProvider(store: store, transport: transport, clock: clock).client(account: "alice")

    clock.advance(by: .seconds(3600)) // the token has expired
    transport.enqueue(json: #"{"access_token":"new","token_type":"Bearer","expires_in":3600}"#, for: tokenURL)
    transport.respond { _ in HTTPTransportResponse(status: 200, body: Data(#"{"name":"Alice"}"#.utf8)) }

    try await withThrowingTaskGroup(of: HTTPTransportResponse.self) { group in
        for _ in 0..<10 {
            group.addTask { try await client.send(HTTPTransportRequest(url: apiURL)) }
        }
        for try await response in group { #expect(response.status == 200) }
    }

    #expect(transport.requests(for: tokenURL).count == 1)
    #expect(transport.requests(for: apiURL).allSatisfy { $0.headers[.authorization] == "Bearer new" })
}

@Test func devicePollingWaitsTheProvidersInterval() async throws {
    let clock = ManualClock()
    let transport = CannedTransport()
    let client = try makeProvider(store: InMemoryTokenStore(), transport: transport, clock: clock).client()
    let device = #"{"device_code":"d1","user_code":"WDJB-MJHT","verification_uri":"https://idp.example/go","expires_in":600,"interval":5}"#
    transport.enqueue(json: device, for: deviceURL)
    transport.enqueue(json: #"{"error":"authorization_pending"}"#, status: 400, for: tokenURL)
    transport.enqueue(json: #"{"access_token":"a1","token_type":"Bearer","expires_in":3600}"#, for: tokenURL)

    let authorization = try await client.startDeviceAuthorization()
    let polling = Task { try await client.authenticate(.deviceCode(authorization)) }
    for _ in 0..<2 {
        try await clock.waitForSleepers() // asleep until the next poll
        clock.advance(by: authorization.interval)
    }
    let token = try await polling.value

    #expect(token.accessToken.value == "a1")
    #expect(transport.requests(for: tokenURL).count == 2)
}

@Test func usesTheTokenAnotherProcessSavedWhileItWaited() async throws {
    let clock = ManualClock()
    let transport = CannedTransport()
    let store = InMemoryTokenStore(tokens: [
        "alice": AccessToken(accessToken: Secret("old"), expiresAt: clock.now(), refreshToken: Secret("r1"))
    ])
    let client = try makeProvider(store: store, transport: transport, clock: clock).client(account: "alice")

    // Another process holds the account's lock while it refreshes.
    let holder = try await AccountLockHolder.hold(store, account: "alice")
    let waiting = Task { try await client.token() }
    try await holder.release(storing: AccessToken(accessToken: Secret("theirs"), expiresAt: clock.now().addingTimeInterval(3600)))

    #expect(try await waiting.value.accessToken.value == "theirs")
    #expect(transport.requests.isEmpty) // no refresh of its own
}

@Test func anAccountWithoutATokenIsNotAuthenticated() async throws {
    let client = try makeProvider(store: InMemoryTokenStore(), transport: CannedTransport(), clock: ManualClock()).client()
    let error = await #expect(throws: OAuth2Error.self) { try await client.token() }
    #expect(error?.code == .notAuthenticated)
}
