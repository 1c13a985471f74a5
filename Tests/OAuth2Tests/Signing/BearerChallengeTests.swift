import Testing
@testable import OAuth2

@Suite struct BearerChallengeTests {
    @Test func parsesTheRFC6750InvalidTokenExample() {
        let challenge = BearerChallenge.parse([
            #"Bearer realm="example", error="invalid_token", error_description="The access token expired""#
        ])
        #expect(
            challenge
                == BearerChallenge(parameters: [
                    "realm": "example", "error": "invalid_token", "error_description": "The access token expired",
                ]))
        #expect(challenge?.error == "invalid_token")
        #expect(challenge?.errorDescription == "The access token expired")
        #expect(challenge?.scope == nil)
    }

    @Test func keepsEveryParameterIncludingRFC9728AndRFC9470Ones() {
        let challenge = BearerChallenge.parse([
            #"Bearer error="insufficient_user_authentication", ACR_VALUES="urn:mace:incommon:iap:silver", max_age=300, "#
                + #"resource_metadata="https://rs.example/.well-known/oauth-protected-resource", realm="x", realm="y""#
        ])
        #expect(challenge?.error == "insufficient_user_authentication")
        #expect(challenge?.acrValues == "urn:mace:incommon:iap:silver")
        #expect(challenge?.maxAge == .seconds(300))
        #expect(challenge?.resourceMetadata == "https://rs.example/.well-known/oauth-protected-resource")
        #expect(challenge?.realm == "x")
    }

    @Test func readsMaxAgeOnlyAsWholeSeconds() {
        for bad in ["-1", "1.5", "", "99999999999", "+5", " 5"] {
            #expect(BearerChallenge(parameters: ["max_age": bad]).maxAge == nil, "\(bad)")
        }
        #expect(BearerChallenge(parameters: ["max_age": "0"]).maxAge == .zero)
    }

    @Test func parsesABareBearerChallenge() {
        #expect(BearerChallenge.parse([#"Bearer realm="example""#]) == BearerChallenge(parameters: ["realm": "example"]))
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
        #expect(challenge == BearerChallenge(parameters: ["realm": "y"]))
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
