import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite struct OAuth2ClientGrantsTests {
    @Test func passwordGrantNeedsTheOptIn() async throws {
        let harness = try ClientHarness()
        let error = await oauth2Error { try await harness.client().authenticate(username: "alice", password: Secret("pw-123456789")) }
        #expect(error?.code == .invalidConfiguration)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func passwordGrantSendsTheCredentialsOnceAndKeepsNoPassword() async throws {
        let harness = try ClientHarness(configuration: Fixture.configuration(allowsPasswordGrant: true))
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let token = try await harness.client().authenticate(username: "alice", password: Secret("pw-123456789"))
        let fields = Fixture.formFields(harness.tokenRequests.first?.body)
        #expect(fields["grant_type"] == "password")
        #expect(fields["username"] == "alice")
        #expect(fields["password"] == "pw-123456789")
        let stored = try #require(try await harness.store.load(account: "alice"))
        let encoded = String(decoding: try JSONEncoder().encode(stored), as: UTF8.self)
        #expect(!encoded.contains("pw-123456789"))
        #expect(stored == token)
    }

    @Test func clientCredentialsUseBasicAuthByDefault() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(refresh: nil), for: Fixture.tokenURL)
        _ = try await harness.client().authenticateWithClientCredentials(scopes: ["svc"])
        let request = try #require(harness.tokenRequests.first)
        #expect(request.authorization?.hasPrefix("Basic ") == true)
        let fields = Fixture.formFields(request.body)
        #expect(fields["grant_type"] == "client_credentials")
        #expect(fields["scope"] == "svc")
        #expect(fields["client_secret"] == nil)
        #expect(request.headers["Content-Type"] == "application/x-www-form-urlencoded")
        #expect(request.headers["Accept"] == "application/json")
        #expect(request.followRedirects == false)
    }

    @Test func clientSecretPostPutsCredentialsInTheBody() async throws {
        let harness = try ClientHarness(configuration: Fixture.configuration(clientAuthentication: .clientSecretPost))
        harness.transport.enqueue(json: Fixture.tokenJSON(refresh: nil), for: Fixture.tokenURL)
        _ = try await harness.client().authenticateWithClientCredentials()
        let request = try #require(harness.tokenRequests.first)
        #expect(request.authorization == nil)
        let fields = Fixture.formFields(request.body)
        #expect(fields["client_id"] == "client-1")
        #expect(fields["client_secret"] == Fixture.clientSecret)
    }

    @Test func assertionGrantSendsTypeAndAssertion() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(refresh: nil), for: Fixture.tokenURL)
        let type = "urn:ietf:params:oauth:grant-type:jwt-bearer"
        _ = try await harness.client().authenticate(assertionType: type, assertion: Secret("eyJhbGciOi.assertion.sig"))
        let fields = Fixture.formFields(harness.tokenRequests.first?.body)
        #expect(fields["grant_type"] == type)
        #expect(fields["assertion"] == "eyJhbGciOi.assertion.sig")
    }

    @Test func tokenEndpointRedirectIsRefused() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(HTTPResponse(status: 307, headers: ["Location": "https://evil.example/token"]), for: Fixture.tokenURL)
        let error = await oauth2Error { _ = try await harness.client().authenticateWithClientCredentials() }
        #expect(error?.code == .unexpectedRedirect)
        #expect(harness.transport.requests.count == 1)
    }

    @Test func deviceFlowPollsUntilApproved() async throws {
        let harness = try ClientHarness()
        let deviceURL = URL(string: "https://idp.example/oauth/device")!
        var configuration = try Fixture.configuration()
        configuration.deviceAuthorizationEndpoint = deviceURL
        let device = try ClientHarness(configuration: configuration)
        _ = harness
        device.transport.enqueue(
            json: "{\"device_code\":\"dc-1234567890\",\"user_code\":\"WDJB-MJHT\",\"verification_uri\":\"https://idp.example/device\",\"expires_in\":600,\"interval\":0}",
            for: deviceURL
        )
        device.transport.enqueue(json: "{\"error\":\"authorization_pending\"}", status: 400, for: Fixture.tokenURL)
        device.transport.enqueue(json: "{\"error\":\"authorization_pending\"}", status: 400, for: Fixture.tokenURL)
        device.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let delegate = RecordingDelegate()
        let client = device.client(delegate: delegate)
        let authorization = try await client.startDeviceAuthorization()
        #expect(authorization.userCode == "WDJB-MJHT")
        let token = try await client.completeDeviceAuthorization(authorization)
        #expect(token.accessToken.value == Fixture.accessToken)
        #expect(device.tokenRequests.count == 3)
        #expect(Fixture.formFields(device.tokenRequests.last?.body)["device_code"] == "dc-1234567890")
        #expect(delegate.events == [.gotAccessToken(token)])
    }

    @Test func deviceFlowStopsWhenDenied() async throws {
        var configuration = try Fixture.configuration()
        let deviceURL = URL(string: "https://idp.example/oauth/device")!
        configuration.deviceAuthorizationEndpoint = deviceURL
        let harness = try ClientHarness(configuration: configuration)
        harness.transport.enqueue(
            json: "{\"device_code\":\"dc-1234567890\",\"user_code\":\"WDJB\",\"verification_uri\":\"https://idp.example/device\",\"expires_in\":600,\"interval\":0}",
            for: deviceURL
        )
        harness.transport.enqueue(json: "{\"error\":\"access_denied\"}", status: 400, for: Fixture.tokenURL)
        let client = harness.client()
        let authorization = try await client.startDeviceAuthorization()
        let error = await oauth2Error { _ = try await client.completeDeviceAuthorization(authorization) }
        #expect(error?.code == .accessDenied)
    }
}
