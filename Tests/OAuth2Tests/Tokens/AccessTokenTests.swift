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

}
