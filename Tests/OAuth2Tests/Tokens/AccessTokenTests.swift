import Foundation
import OAuth2
import Testing

@Suite struct AccessTokenTests {
    private let issued = Date(timeIntervalSince1970: 1_800_000_000)

    private func token(lifetime: TimeInterval, knowsIssue: Bool = true) -> AccessToken {
        var token = AccessToken(accessToken: Secret("at"), expiresAt: issued.addingTimeInterval(lifetime))
        if knowsIssue { token.issuedAt = issued }
        return token
    }

    @Test func theSkewCountsAtMostHalfTheLifetime() {
        let short = token(lifetime: 2)
        #expect(!short.isExpired(at: issued.addingTimeInterval(0.9), skew: .seconds(60)))
        #expect(short.isExpired(at: issued.addingTimeInterval(1.0), skew: .seconds(60)))
    }

    @Test func aLongLivedTokenGetsTheWholeSkew() {
        let long = token(lifetime: 3600)
        #expect(!long.isExpired(at: issued.addingTimeInterval(3539), skew: .seconds(60)))
        #expect(long.isExpired(at: issued.addingTimeInterval(3540), skew: .seconds(60)))
    }

    @Test func withoutAKnownIssueTimeTheWholeSkewApplies() {
        let short = token(lifetime: 2, knowsIssue: false)
        #expect(short.isExpired(at: issued, skew: .seconds(60)))
    }

    @Test func withoutSkewOnlyTheExpiryCounts() {
        let short = token(lifetime: 2)
        #expect(!short.isExpired(at: issued.addingTimeInterval(1.9)))
        #expect(short.isExpired(at: issued.addingTimeInterval(2)))
    }

    @Test func theAuthorizationFieldFollowsTheAccessTokenThroughCopiesChangesAndTheStoredForm() throws {
        var token = AccessToken(accessToken: Secret("first"), scopes: ["read"])
        let copy = token
        #expect(token.authorizationField == HTTPField(name: .authorization, value: "Bearer first"))

        token.accessToken = Secret("second")
        #expect(token.authorizationField.value == "Bearer second")
        #expect(copy.authorizationField.value == "Bearer first")

        // Held alone, the token changes its own box: the field changes with it.
        token.accessToken = Secret("third")
        #expect(token.authorizationField.value == "Bearer third")

        // Other fields leave it as it is, in the copy they make.
        var rescoped = token
        rescoped.scopes = ["write"]
        #expect(rescoped.authorizationField.value == "Bearer third")

        let decoded = try JSONDecoder().decode(AccessToken.self, from: JSONEncoder().encode(token))
        #expect(decoded.authorizationField.value == "Bearer third")
        #expect(decoded == token)
    }

}
