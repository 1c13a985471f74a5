import Testing
@testable import OAuth2

@Suite struct BearerChallengeTests {
    @Test func parsesTheRFC6750InvalidTokenExample() {
        let challenge = BearerChallenge.parse([
            #"Bearer realm="example", error="invalid_token", error_description="The access token expired""#
        ])
        #expect(challenge == BearerChallenge(error: "invalid_token", errorDescription: "The access token expired", scope: nil))
    }

    @Test func parsesABareBearerChallenge() {
        #expect(BearerChallenge.parse([#"Bearer realm="example""#]) == BearerChallenge())
        #expect(BearerChallenge.parse(["Bearer"]) == BearerChallenge())
    }

    @Test func parsesInsufficientScopeWithScope() {
        let challenge = BearerChallenge.parse([#"Bearer error="insufficient_scope", scope="read write""#])
        #expect(challenge?.error == "insufficient_scope")
        #expect(challenge?.scope == "read write")
    }

    @Test func matchesTheSchemeAndParameterNamesCaseInsensitively() {
        let challenge = BearerChallenge.parse([#"bEaReR ERROR="invalid_token""#])
        #expect(challenge?.error == "invalid_token")
    }

    @Test func readsTokenValuesAndSpaceAroundEquals() {
        #expect(BearerChallenge.parse(["Bearer error=invalid_token"])?.error == "invalid_token")
        #expect(BearerChallenge.parse(["Bearer error = invalid_token"])?.error == "invalid_token")
    }

    @Test func undoesQuotedStringEscapes() {
        let challenge = BearerChallenge.parse([#"Bearer error="invalid_token", error_description="say \"hi\", then \\ go""#])
        #expect(challenge?.errorDescription == #"say "hi", then \ go"#)
    }

    @Test func findsBearerAfterOtherChallengesInOneField() {
        let value = #"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple", Bearer error="invalid_token""#
        #expect(BearerChallenge.parse([value])?.error == "invalid_token")
    }

    @Test func findsBearerAfterAToken68Challenge() {
        #expect(BearerChallenge.parse(["Negotiate abc123==, Bearer error=invalid_token"])?.error == "invalid_token")
    }

    @Test func doesNotTakeAnotherSchemesParameters() {
        let challenge = BearerChallenge.parse([#"Basic realm="x", error="invalid_token", Bearer realm="y""#])
        #expect(challenge == BearerChallenge())
    }

    @Test func findsBearerInALaterField() {
        let challenge = BearerChallenge.parse([#"Basic realm="simple""#, #"Bearer error="invalid_token""#])
        #expect(challenge?.error == "invalid_token")
    }

    @Test func toleratesEmptyListElements() {
        #expect(BearerChallenge.parse([#", Basic realm="a" ,, Bearer  error="invalid_token" , "#])?.error == "invalid_token")
    }

    @Test func returnsNilWithoutABearerChallenge() {
        #expect(BearerChallenge.parse([]) == nil)
        #expect(BearerChallenge.parse([""]) == nil)
        #expect(BearerChallenge.parse([#"Basic realm="x""#]) == nil)
        #expect(BearerChallenge.parse(["BearerX error=invalid_token"]) == nil)
    }

    @Test func keepsWhatWasReadBeforeMalformedText() {
        let challenge = BearerChallenge.parse([#"Bearer error="invalid_token", error_description="unterminated"#])
        #expect(challenge?.error == "invalid_token")
        #expect(challenge?.errorDescription == nil)
    }

    @Test func stopsAtMalformedTextBeforeBearer() {
        #expect(BearerChallenge.parse([#"Basic realm="x" junk, Bearer error="invalid_token""#]) == nil)
    }

    @Test func keepsTheFirstOfARepeatedParameter() {
        #expect(BearerChallenge.parse([#"Bearer error="invalid_token", error="other""#])?.error == "invalid_token")
    }
}
