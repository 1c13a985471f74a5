import Foundation
import Testing
@testable import OAuth2

/// What a resource server's 401 or 403 says of the token that signed the request.
@Suite struct BearerRejectionTests {
    private func rejection(_ status: HTTPResponse.Status, _ challenges: [String], dpopBound: Bool = false) -> String {
        var headers = HTTPFields()
        for challenge in challenges { headers.append(HTTPField(name: .wwwAuthenticate, value: challenge)) }
        switch BearerRejection(HTTPTransportResponse(status: status, headers: headers), dpopBound: dpopBound) {
        case .none: return "none"
        case .invalidToken: return "invalidToken"
        case .insufficientScope(let scope): return "insufficientScope(\(scope ?? "-"))"
        case .insufficientUserAuthentication(let challenge): return "insufficientUserAuthentication(\(challenge.acrValues ?? "-"))"
        case .unauthorized: return "unauthorized"
        case .dpopRequired: return "dpopRequired"
        }
    }

    @Test(arguments: [
        #"Bearer error="invalid_token"#,
        #"Bearer realm="api, error="invalid_token""#,
        #"Bearer error=invalid_token, error_description="unterminated"#,
        // A Bearer error read before the damage is no error code: it was taken
        // as `invalid_token, error_description=` and the call failed with `unauthorized`.
        #"Bearer error="invalid_token, error_description="unterminated"#,
        #"Bearer error="invalid_request", error_description="unterminated"#,
        #"Bearer error="insufficient_scope", scope="admin"#,
        #"Bearer ,,, ="#,
        "\"Bearer",
        "=Bearer",
    ])
    func aChallengeThatCannotBeParsedCountsAsA401WithoutAnErrorCode(challenge: String) {
        #expect(rejection(401, [challenge]) == "invalidToken", "\(challenge)")
    }

    @Test func a401WithAMalformedFieldAfterTheBearerOneCountsAsA401WithoutAnErrorCode() {
        #expect(rejection(401, [#"Bearer error="invalid_request""#, #"Basic realm="unterminated"#]) == "invalidToken")
    }

    @Test func a401WithoutAChallengeCountsAsInvalidToken() {
        #expect(rejection(401, []) == "invalidToken")
    }

    @Test func a401WithOnlyAnotherSchemeIsUnauthorized() {
        #expect(rejection(401, [#"Basic realm="api""#]) == "unauthorized")
    }

    @Test func a401WithAnotherBearerErrorIsUnauthorized() {
        #expect(rejection(401, [#"Bearer error="invalid_request""#]) == "unauthorized")
    }

    @Test func insufficientScopeOn401Or403IsInsufficientScope() {
        #expect(rejection(401, [#"Bearer error="insufficient_scope", scope="admin""#]) == "insufficientScope(admin)")
        #expect(rejection(403, [#"Bearer error="insufficient_scope""#]) == "insufficientScope(-)")
    }

    @Test func insufficientUserAuthenticationOn401KeepsItsChallenge() {
        #expect(
            rejection(401, [#"Bearer error="insufficient_user_authentication", acr_values="phr""#])
                == "insufficientUserAuthentication(phr)")
    }

    @Test func anyOther403IsReturned() {
        #expect(rejection(403, []) == "none")
    }

    // A bearer token answered "DPoP only" was an `unauthorized` with a message about Bearer.
    @Test func aBearerTokenAnsweredWithADPoPChallengeOnlyIsDPoPRequired() {
        #expect(rejection(401, [#"DPoP algs="ES256 PS256""#]) == "dpopRequired")
        #expect(rejection(401, [#"DPoP error="invalid_token""#]) == "dpopRequired")
    }

    @Test func aBearerTokenAnsweredWithBothSchemesFollowsTheBearerOne() {
        #expect(rejection(401, [#"DPoP algs="ES256", Bearer error="invalid_token""#]) == "invalidToken")
        #expect(rejection(401, [#"Bearer realm="api", DPoP algs="ES256""#]) == "invalidToken")
    }

    @Test func aDPoPBoundTokenFollowsTheDPoPChallenge() {
        let both = [#"Bearer error="invalid_request", DPoP error="invalid_token""#]
        #expect(rejection(401, both, dpopBound: true) == "invalidToken")
        #expect(rejection(401, both) == "unauthorized")
        #expect(rejection(401, [#"DPoP error="insufficient_scope", scope="admin""#], dpopBound: true) == "insufficientScope(admin)")
        #expect(rejection(403, [#"DPoP error="insufficient_scope""#], dpopBound: true) == "insufficientScope(-)")
        #expect(rejection(401, [#"DPoP error="invalid_dpop_proof""#], dpopBound: true) == "unauthorized")
        #expect(rejection(401, [#"DPoP algs="ES256""#], dpopBound: true) == "invalidToken")
    }

    @Test func aDPoPBoundTokenWithOnlyABearerChallengeFollowsIt() {
        #expect(rejection(401, [#"Bearer error="invalid_token""#], dpopBound: true) == "invalidToken")
        #expect(rejection(401, [#"Basic realm="api""#], dpopBound: true) == "unauthorized")
    }
}
