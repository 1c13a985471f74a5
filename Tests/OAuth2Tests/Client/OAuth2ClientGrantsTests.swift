import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite struct OAuth2ClientGrantsTests {
    @Test func passwordGrantNeedsTheOptIn() async throws {
        let harness = try ClientHarness()
        let error = await oauth2Error {
            try await harness.client().authenticate(.password(username: "alice", password: Secret("pw-123456789")))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func passwordGrantSendsTheCredentialsOnceAndKeepsNoPassword() async throws {
        let harness = try ClientHarness(configuration: Fixture.configuration(allowsPasswordGrant: true))
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let token = try await harness.client().authenticate(.password(username: "alice", password: Secret("pw-123456789")))
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
        _ = try await harness.client().authenticate(.clientCredentials(scopes: ["svc"]))
        let request = try #require(harness.tokenRequests.first)
        #expect(request.authorization?.hasPrefix("Basic ") == true)
        let fields = Fixture.formFields(request.body)
        #expect(fields["grant_type"] == "client_credentials")
        #expect(fields["scope"] == "svc")
        #expect(fields["client_secret"] == nil)
        #expect(request.headers[.contentType] == "application/x-www-form-urlencoded")
        #expect(request.headers[.accept] == "application/json")
        #expect(request.redirects == .never)
    }

    @Test func clientSecretPostPutsCredentialsInTheBody() async throws {
        let harness = try ClientHarness(configuration: Fixture.configuration(clientAuthentication: .clientSecretPost))
        harness.transport.enqueue(json: Fixture.tokenJSON(refresh: nil), for: Fixture.tokenURL)
        _ = try await harness.client().authenticate(.clientCredentials)
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
        _ = try await harness.client().authenticate(.assertion(type: type, assertion: Secret("eyJhbGciOi.assertion.sig")))
        let fields = Fixture.formFields(harness.tokenRequests.first?.body)
        #expect(fields["grant_type"] == type)
        #expect(fields["assertion"] == "eyJhbGciOi.assertion.sig")
    }

    @Test func tokenEndpointRedirectIsRefused() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(
            HTTPTransportResponse(status: 307, headers: [.location: "https://evil.example/token"]), for: Fixture.tokenURL)
        let error = await oauth2Error { _ = try await harness.client().authenticate(.clientCredentials) }
        #expect(error?.code == .unexpectedRedirect)
        #expect(harness.transport.requests.count == 1)
    }
}

extension OAuth2ClientGrantsTests {
    /// The device flow on the harness's ``ManualClock``: each test moves time
    /// itself, so none waits for real and each takes milliseconds.
    @Suite(.timeLimit(.minutes(1))) struct DeviceFlow {
        static let deviceURL = URL(string: "https://idp.example/oauth/device")!
        static let pending = #"{"error":"authorization_pending"}"#
        static let slowDown = #"{"error":"slow_down"}"#

        let harness: ClientHarness
        let delegate = RecordingDelegate()
        let client: OAuth2Client
        var clock: ManualClock { harness.clock }

        init() throws {
            var configuration = try Fixture.configuration()
            configuration.deviceAuthorizationEndpoint = Self.deviceURL
            harness = try ClientHarness(configuration: configuration)
            client = harness.client(delegate: delegate)
        }

        /// Queues the token endpoint's answers to the polls, in order.
        func answerPolls(_ answers: (json: String, status: HTTPResponse.Status)...) {
            for answer in answers {
                harness.transport.enqueue(json: answer.json, status: answer.status, for: Fixture.tokenURL)
            }
        }

        /// Starts the device flow (the provider asking for `interval` seconds
        /// between polls) and returns the polling task once it is asleep before its first poll.
        func startPolling(interval: Int = 5, expiresIn: Int = 600) async throws -> (DeviceAuthorization, Task<AccessToken, any Error>) {
            harness.transport.enqueue(
                json:
                    #"{"device_code":"dc-1234567890","user_code":"WDJB-MJHT","verification_uri":"https://idp.example/device","expires_in":\#(expiresIn),"interval":\#(interval)}"#,
                for: Self.deviceURL
            )
            let authorization = try await client.startDeviceAuthorization()
            let polling = Task { [client] in try await client.authenticate(.deviceCode(authorization)) }
            try await clock.waitForSleepers()
            return (authorization, polling)
        }

        /// Moves the clock by `duration` and returns once the woken poller is asleep again.
        func advanceToTheNextPoll(by duration: Duration) async throws {
            clock.advance(by: duration)
            try await clock.waitForSleepers()
        }

        @Test func pollsEachIntervalUntilApproved() async throws {
            answerPolls((Self.pending, 400), (Fixture.tokenJSON(), 200))
            let (authorization, polling) = try await startPolling(interval: 5)
            #expect(authorization.userCode == "WDJB-MJHT")
            clock.advance(by: .seconds(4))
            #expect(clock.sleeperCount == 1)
            #expect(harness.tokenRequests.isEmpty)
            try await advanceToTheNextPoll(by: .seconds(1))
            #expect(harness.tokenRequests.count == 1)
            clock.advance(by: .seconds(5))
            let token = try await polling.value
            #expect(token.accessToken.value == Fixture.accessToken)
            #expect(harness.tokenRequests.count == 2)
            #expect(Fixture.formFields(harness.tokenRequests.last?.body)["device_code"] == "dc-1234567890")
            #expect(delegate.events == [.gotAccessToken(token)])
        }

        @Test func slowDownAddsFiveSecondsToTheIntervalEachTime() async throws {
            answerPolls((Self.slowDown, 400), (Self.slowDown, 400), (Fixture.tokenJSON(), 200))
            let (_, polling) = try await startPolling(interval: 5)
            try await advanceToTheNextPoll(by: .seconds(5))
            #expect(harness.tokenRequests.count == 1)
            // Neither the old interval nor a second short of the new one brings the next poll.
            clock.advance(by: .seconds(5))
            #expect(clock.sleeperCount == 1)
            clock.advance(by: .seconds(4))
            #expect(clock.sleeperCount == 1)
            #expect(harness.tokenRequests.count == 1)
            try await advanceToTheNextPoll(by: .seconds(1))
            #expect(harness.tokenRequests.count == 2)
            // After the second slow_down, fifteen seconds.
            clock.advance(by: .seconds(14))
            #expect(clock.sleeperCount == 1)
            #expect(harness.tokenRequests.count == 2)
            clock.advance(by: .seconds(1))
            _ = try await polling.value
            #expect(harness.tokenRequests.count == 3)
        }

        @Test func endsWithExpiredTokenOnceTheClockPassesTheExpiry() async throws {
            answerPolls((Self.pending, 400), (Self.pending, 400))
            let (authorization, polling) = try await startPolling(interval: 5, expiresIn: 8)
            try await advanceToTheNextPoll(by: .seconds(5))
            clock.advance(by: .seconds(5))
            #expect(clock.now() > authorization.expiresAt)
            let error = await oauth2Error { _ = try await polling.value }
            #expect(error?.code == .expiredToken)
            #expect(harness.tokenRequests.count == 2)
            #expect(delegate.events == [.failedToGetAccessToken(try #require(error))])
        }

        @Test func cancellingDuringTheSleepEndsWithCancelled() async throws {
            let (_, polling) = try await startPolling(interval: 5)
            polling.cancel()
            // The clock never moves: only the cancellation can end the sleep.
            let error = await oauth2Error { _ = try await polling.value }
            #expect(error?.code == .cancelled)
            #expect(clock.sleeperCount == 0)
            #expect(harness.tokenRequests.isEmpty)
        }

        @Test func stopsWhenDenied() async throws {
            answerPolls((#"{"error":"access_denied"}"#, 400))
            let (_, polling) = try await startPolling(interval: 5)
            clock.advance(by: .seconds(5))
            let error = await oauth2Error { _ = try await polling.value }
            #expect(error?.code == .accessDenied)
            #expect(harness.tokenRequests.count == 1)
        }
    }
}
