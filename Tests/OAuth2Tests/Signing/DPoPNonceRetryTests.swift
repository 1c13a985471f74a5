@testable import OAuth2
import Testing

@Suite struct DPoPNonceRetryTests {
    @Test func anAnswerThatAsksForNoNonceStands() {
        var policy = DPoPNonceRetry()
        #expect(policy.event(.answered(refusesForNonce: false, nonce: nil)) == .accept)
        #expect(policy.event(.answered(refusesForNonce: false, nonce: "n-1")) == .accept)
        // Answers that stand do not use up the retry.
        #expect(policy.event(.answered(refusesForNonce: true, nonce: "n-1")) == .retry(nonce: "n-1"))
    }

    @Test func theFirstDemandIsRetriedWithItsNonceAndTheSecondIsALoop() {
        var policy = DPoPNonceRetry()
        #expect(policy.event(.answered(refusesForNonce: true, nonce: "n-1")) == .retry(nonce: "n-1"))
        guard case .fail(let error) = policy.event(.answered(refusesForNonce: true, nonce: "n-2")) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .dpopNonceLoop)
        #expect(error.code.rawValue == "dpop_nonce_loop")
    }

    @Test func theRetriedAnswerStandsWhenItIsNotADemand() {
        var policy = DPoPNonceRetry()
        _ = policy.event(.answered(refusesForNonce: true, nonce: "n-1"))
        #expect(policy.event(.answered(refusesForNonce: false, nonce: "n-2")) == .accept)
    }

    /// Without a nonce to send, the same proof would be refused again.
    @Test func aDemandWithoutANonceIsNotRetried() {
        var policy = DPoPNonceRetry()
        #expect(policy.event(.answered(refusesForNonce: true, nonce: nil)) == .accept)
    }
}
