import Testing
@testable import OAuth2

/// `WWW-Authenticate: DPoP` (RFC 9449 §7.1), beside `Bearer`.
@Suite struct DPoPChallengeTests {
    @Test func parsesTheRFC9449NonceChallenge() {
        // RFC 9449 §9, the resource server's answer asking for a nonce.
        let challenge = DPoPChallenge.parse([
            #"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#
        ])
        #expect(challenge?.error == "use_dpop_nonce")
        #expect(challenge?.errorDescription == "Resource server requires nonce in DPoP proof")
    }

    @Test func splitsAlgsAtSpaces() {
        // RFC 9449 §7.1's example.
        let challenge = DPoPChallenge.parse([#"DPoP algs="ES256 PS256""#])
        #expect(challenge?.algorithms == [.es256, .ps256])
        #expect(challenge?.error == nil)
    }

    @Test func readsBothSchemesFromOneFieldAndFromSeveral() {
        let one = BearerChallenge.readSchemes([#"Bearer realm="api", DPoP algs="ES256", error="invalid_token""#])
        #expect(one.bearer == BearerChallenge(parameters: ["realm": "api"]))
        #expect(one.dpop == DPoPChallenge(algorithms: [.es256], error: "invalid_token"))
        #expect(!one.malformed)

        let two = BearerChallenge.readSchemes([#"dpop ERROR="insufficient_scope", scope="admin""#, #"Bearer error="invalid_token""#])
        #expect(two.bearer?.error == "invalid_token")
        #expect(two.dpop?.error == "insufficient_scope")
        #expect(two.dpop?.scope == "admin")
    }

    @Test func noDPoPChallengeIsNil() {
        #expect(DPoPChallenge.parse([#"Bearer error="invalid_token""#]) == nil)
        #expect(DPoPChallenge.parse([]) == nil)
    }

    @Test func aDamagedFieldIsMalformedForBothSchemes() {
        let read = BearerChallenge.readSchemes([#"DPoP error="use_dpop_nonce, error_description="cut"#])
        #expect(read.malformed)
    }
}
