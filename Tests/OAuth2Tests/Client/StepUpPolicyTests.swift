import Foundation
import Testing
@testable import OAuth2

/// The step-up policy as a value: what a refusal leads to, without sockets or clocks.
@Suite struct StepUpPolicyTests {
    private let resource = URL(string: "https://mcp.example/mcp")!
    private var initial: StepUpRequest { StepUpRequest(resource: resource, scopes: ["read"]) }

    private func challenge(_ code: OAuth2Error.Code, scopes: [String] = ["read", "write"], acr: [String] = []) -> OAuth2Error {
        var error = OAuth2Error(code: code, message: "refused")
        error.stepUp = StepUpRequest(resource: resource, scopes: scopes, acrValues: acr)
        return error
    }

    @Test func withoutATokenTheUserSignsInOnce() {
        var policy = StepUpPolicy(mode: .automatic, canRedirect: true)
        #expect(policy.event(.noToken(initial: initial)) == .authorize(initial))
        guard case .fail(let error) = policy.event(.noToken(initial: initial)) else {
            Issue.record("a second sign-in in one request")
            return
        }
        #expect(error.code == .authorizationRequired)
        #expect(error.stepUp == initial)
    }

    @Test(arguments: [ProtectedResourceClient.StepUp.automatic, .report])
    func withoutATokenAndWithoutAHandlerAuthorizationIsRequiredWithWhatToAskFor(mode: ProtectedResourceClient.StepUp) {
        var policy = StepUpPolicy(mode: mode, canRedirect: false)
        guard case .fail(let error) = policy.event(.noToken(initial: initial)) else {
            Issue.record("authorized without a handler")
            return
        }
        #expect(error.code == .authorizationRequired)
        #expect(error.stepUp == initial)
    }

    @Test(arguments: [OAuth2Error.Code.insufficientScope, .insufficientUserAuthentication])
    func aChallengeStepsUpOnceThenTheSameChallengeIsATypedError(code: OAuth2Error.Code) {
        var policy = StepUpPolicy(mode: .automatic, canRedirect: true)
        let refused = challenge(code)
        #expect(policy.event(.challenged(refused)) == .authorize(refused.stepUp!))
        guard case .fail(let error) = policy.event(.challenged(refused)) else {
            Issue.record("stepped up twice for the same thing")
            return
        }
        #expect(error.code == code)
        #expect(error.stepUp == refused.stepUp)
    }

    @Test func reportModeThrowsTheChallengeWithWhatToAskFor() {
        var policy = StepUpPolicy(mode: .report, canRedirect: true)
        let refused = challenge(.insufficientScope)
        #expect(policy.event(.challenged(refused)) == .fail(refused))
        // A first sign-in still goes through the handler in report mode.
        #expect(policy.event(.noToken(initial: initial)) == .authorize(initial))
    }

    @Test func differentAsksAreCappedSoAResourceCannotLoopTheUser() {
        var policy = StepUpPolicy(mode: .automatic, canRedirect: true)
        for index in 0..<StepUpPolicy.maxStepUps {
            let refused = challenge(.insufficientScope, scopes: ["read", "s\(index)"])
            #expect(policy.event(.challenged(refused)) == .authorize(refused.stepUp!))
        }
        guard case .fail(let error) = policy.event(.challenged(challenge(.insufficientScope, scopes: ["read", "another"]))) else {
            Issue.record("no cap on step-ups")
            return
        }
        #expect(error.code == .insufficientScope)
    }

    @Test func aChallengeWithoutAStepUpIsThrownAsItIs() {
        var policy = StepUpPolicy(mode: .automatic, canRedirect: true)
        let plain = OAuth2Error(code: .insufficientScope, message: "refused")
        #expect(policy.event(.challenged(plain)) == .fail(plain))
    }

    @Test func theUnionKeepsTheHeldScopesFirstAndAddsTheAskedOnesOnce() {
        #expect(StepUpRequest.union(["read", "profile"], ["write", "read", "write"]) == ["read", "profile", "write"])
    }
}
