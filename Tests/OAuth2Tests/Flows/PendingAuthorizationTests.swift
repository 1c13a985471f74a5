import Foundation
import Testing
@testable import OAuth2

@Suite struct PendingAuthorizationTests {
    private func make() throws -> PendingAuthorization {
        try AuthorizationRequestBuilder.make(
            configuration: FlowFixtures.configuration(issuer: "https://id.example.com"),
            redirectURI: FlowFixtures.redirectURI,
            scopes: ["openid"],
            additionalParameters: [],
            now: FlowFixtures.requestedAt
        )
    }

    @Test func roundTripsThroughJSONForASession() throws {
        let pending = try make()
        let data = try JSONEncoder().encode(pending)
        let decoded = try JSONDecoder().decode(PendingAuthorization.self, from: data)
        #expect(decoded == pending)
        #expect(decoded.codeVerifier.value == pending.codeVerifier.value)
    }

    @Test func descriptionShowsNeitherVerifierNorState() throws {
        let pending = try make()
        for text in ["\(pending)", String(reflecting: pending)] {
            #expect(!text.contains(pending.codeVerifier.value))
            #expect(!text.contains(pending.state))
        }
        #expect("\(pending)".contains("https://id.example.com/oauth/authorize"))
    }
}
