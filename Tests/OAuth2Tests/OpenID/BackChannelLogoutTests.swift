import Foundation
import Testing
@testable import OAuth2

/// The back-channel logout request's form body (Back-Channel Logout 1.0
/// §2.5) and the answers of §2.8.
@Suite struct BackChannelLogoutTests {
    static func token(_ body: String) throws(OAuth2Error) -> String {
        try BackChannelLogout.logoutToken(fromForm: Data(body.utf8))
    }

    static func code(_ body: String) -> OAuth2Error.Code? {
        do {
            _ = try token(body)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func theLogoutTokenIsReadAndOtherParametersAreIgnored() throws {
        // The conformance suite sends an ignored_parameter with it.
        #expect(try Self.token("logout_token=a.b.c&ignored_parameter=The+POST+body+MAY+contain+other+values") == "a.b.c")
        #expect(try Self.token("ignored=1&logout_token=a%2Eb.c\r\n") == "a.b.c")
    }

    @Test func exactlyOneNonEmptyLogoutTokenIsRequired() {
        #expect(Self.code("") == .invalidLogoutToken)
        #expect(Self.code("other=1") == .invalidLogoutToken)
        #expect(Self.code("logout_token=") == .invalidLogoutToken)
        #expect(Self.code("logout_token=a.b.c&logout_token=d.e.f") == .invalidLogoutToken)
        #expect(Self.code("logout_token=%zz") == .invalidLogoutToken)
    }

    @Test func aBodyOverTheLimitIsRefusedUnread() {
        let body = "logout_token=" + String(repeating: "a", count: BackChannelLogout.maxBodySize)
        #expect(Self.code(body) == .responseTooLarge)
        do {
            _ = try BackChannelLogout.logoutToken(fromForm: Data([0x6C, 0xFF, 0xFE]))
            Issue.record("accepted bytes that are not UTF-8")
        } catch {
            #expect(error.code == .invalidLogoutToken)
        }
    }

    @Test func successIs200AndNotCached() {
        #expect(BackChannelLogout.ok.status == .ok)
        #expect(BackChannelLogout.ok.headers[.cacheControl] == "no-store")
        #expect(BackChannelLogout.ok.body.isEmpty)
    }

    @Test func failureIs400WithTheErrorObjectNamingTheCodeOnly() throws {
        let answer = BackChannelLogout.failure(
            OAuth2Error(code: .audienceMismatch, message: "the logout token's aud does not contain this client's id"))
        #expect(answer.status == .badRequest)
        #expect(answer.headers[.cacheControl] == "no-store")
        #expect(answer.headers[.contentType] == "application/json")
        let object = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: String])
        #expect(object == ["error": "invalid_request", "error_description": "audience_mismatch"])
        struct AppFailure: Error {}
        let other = try #require(try JSONSerialization.jsonObject(with: BackChannelLogout.failure(AppFailure()).body) as? [String: String])
        #expect(other["error"] == "invalid_request")
    }
}
