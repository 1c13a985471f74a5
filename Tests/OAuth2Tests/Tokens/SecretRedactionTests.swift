import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// Runs every client path that touches a secret with trace logging on, then
/// searches each captured log line, error and description for the secrets.
@Suite struct SecretRedactionTests {
    @Test func noSecretInLogsErrorsOrDescriptions() async throws {
        let harness = try ClientHarness(configuration: Fixture.configuration(allowsPasswordGrant: true))
        let secrets = [
            Fixture.clientSecret, Fixture.accessToken, Fixture.refreshToken, "pw-123456789", "code-secret-1234",
            "at-next-00000000000000000", "rt-next-00000000000000000",
        ]
        var texts: [String] = []
        let client = harness.client()

        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let passwordGrant = OAuth2Grant.password(username: "alice", password: Secret("pw-123456789"))
        texts.append(passwordGrant.description)
        texts.append(String(reflecting: passwordGrant))
        let token = try await client.authenticate(passwordGrant)
        texts.append(token.description)
        texts.append(String(describing: token))
        texts.append(String(reflecting: token.accessToken))

        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        texts.append(pending.description)
        harness.transport.enqueue(
            json: "{\"error\":\"invalid_grant\",\"error_description\":\"bad code\"}", status: 400, for: Fixture.tokenURL)
        if let error = await oauth2Error({
            try await client.authenticate(
                .authorizationCode(redirect: "\(Fixture.redirectURI.absoluteString)?code=code-secret-1234&state=\(pending.state)"))
        }) {
            texts.append(error.description)
        }
        harness.transport.enqueue(
            json: Fixture.tokenJSON(access: "at-next-00000000000000000", refresh: "rt-next-00000000000000000"), for: Fixture.tokenURL)
        let refreshed = try await client.refreshAccessToken()
        texts.append(refreshed.description)
        harness.transport.enqueue(HTTPTransportResponse(status: 401), for: Fixture.apiURL)
        harness.transport.enqueue(json: "{\"error\":\"invalid_grant\"}", status: 400, for: Fixture.tokenURL)
        if let error = await oauth2Error({ _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }) {
            texts.append(error.description)
        }
        texts.append(contentsOf: harness.transport.requests.map(\.description))
        texts.append(contentsOf: harness.logs.all)

        #expect(!harness.logs.all.isEmpty)
        for text in texts {
            for secret in secrets {
                #expect(!text.contains(secret), "secret found in: \(text)")
            }
        }
    }
}
