import Testing
@testable import OAuth2

/// How long a caller may drive libcurl itself: the configuration's
/// `callerDrivenWait`, in nanoseconds, as the engine keeps it.
@Suite struct CurlEngineWaitTests {
    @Test func theCallerDrivenWaitIsAtMostTheDocumentedTenSeconds() {
        #expect(CurlEngine.callerDrivenNanoseconds(.seconds(10)) == 10_000_000_000)
        #expect(CurlEngine.callerDrivenNanoseconds(.milliseconds(10_999)) == 10_000_000_000)
        #expect(CurlEngine.callerDrivenNanoseconds(.seconds(86_400 * 365)) == 10_000_000_000)
    }

    @Test func aShorterWaitIsKeptToTheNanosecondAndNoneIsNone() {
        #expect(CurlEngine.callerDrivenNanoseconds(.milliseconds(1)) == 1_000_000)
        #expect(CurlEngine.callerDrivenNanoseconds(.nanoseconds(9_999_999_999)) == 9_999_999_999)
        #expect(CurlEngine.callerDrivenNanoseconds(.zero) == 0)
        #expect(CurlEngine.callerDrivenNanoseconds(.milliseconds(-5)) == 0)
    }
}
