import Testing
@testable import OAuth2

@Suite struct OAuth2ErrorTests {
    @Test func providerErrorKeepsCodeVerbatimAndStripsControlCharacters() {
        let error = OAuth2Error.provider(error: "bad_verification_code", description: "line\r\none\u{1B}[31m", uri: nil)
        #expect(error.code.rawValue == "bad_verification_code")
        #expect(error.errorDescription == "lineone[31m")
        #expect(error.description == "bad_verification_code: lineone[31m")
    }
}
