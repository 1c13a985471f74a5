import Foundation
import Testing
@testable import OAuth2

@Suite struct DeviceAuthorizationTests {
    static let deviceCode = "GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS"

    private func parse(_ body: String, status: HTTPResponse.Status = 200) throws(OAuth2Error) -> DeviceAuthorization {
        try DeviceAuthorization.parse(FlowFixtures.json(body, status: status), requestedAt: FlowFixtures.requestedAt)
    }

    private func error(_ body: String, status: HTTPResponse.Status = 200) -> OAuth2Error? {
        let error = FlowFixtures.error { () throws(OAuth2Error) in try parse(body, status: status) }
        #expect(error.map { !$0.message.contains(Self.deviceCode) } ?? true)
        return error
    }

    @Test func parsesTheRFC8628Example() throws {
        let authorization = try parse(
            """
            {"device_code": "\(Self.deviceCode)", "user_code": "WDJB-MJHT",
             "verification_uri": "https://example.com/device",
             "verification_uri_complete": "https://example.com/device?user_code=WDJB-MJHT",
             "expires_in": 1800, "interval": 5}
            """)
        #expect(authorization.deviceCode.value == Self.deviceCode)
        #expect(authorization.userCode == "WDJB-MJHT")
        #expect(authorization.verificationURI == URL(string: "https://example.com/device"))
        #expect(authorization.verificationURIComplete == URL(string: "https://example.com/device?user_code=WDJB-MJHT"))
        #expect(authorization.expiresAt == FlowFixtures.requestedAt.addingTimeInterval(1800))
        #expect(authorization.interval == .seconds(5))
    }

    @Test func acceptsGooglesVerificationURLSpelling() throws {
        let authorization = try parse(
            #"{"device_code":"d","user_code":"ABC","verification_url":"https://www.google.com/device","expires_in":"1800"}"#)
        #expect(authorization.verificationURI == URL(string: "https://www.google.com/device"))
        #expect(authorization.verificationURIComplete == nil)
    }

    @Test func defaultsTheIntervalToFiveSeconds() throws {
        let authorization = try parse(#"{"device_code":"d","user_code":"ABC","verification_uri":"https://e.com/d","expires_in":600}"#)
        #expect(authorization.interval == .seconds(5))
    }

    @Test func raisesAZeroIntervalToOneSecond() throws {
        let authorization = try parse(
            #"{"device_code":"d","user_code":"ABC","verification_uri":"https://e.com/d","expires_in":600,"interval":0}"#)
        #expect(authorization.interval == .seconds(1))
    }

    @Test func refusesMissingRequiredFields() {
        #expect(error(#"{"user_code":"ABC","verification_uri":"https://e.com/d","expires_in":600}"#)?.code == .invalidTokenResponse)
        #expect(error(#"{"device_code":"d","verification_uri":"https://e.com/d","expires_in":600}"#)?.code == .invalidTokenResponse)
        #expect(error(#"{"device_code":"d","user_code":"ABC","expires_in":600}"#)?.code == .invalidTokenResponse)
        #expect(error(#"{"device_code":"d","user_code":"ABC","verification_uri":"https://e.com/d"}"#)?.code == .invalidTokenResponse)
    }

    @Test func refusesAUserCodeWithTerminalEscapes() {
        #expect(
            error(#"{"device_code":"d","user_code":"AB\u001b[2J","verification_uri":"https://e.com/d","expires_in":600}"#)?.code
                == .invalidTokenResponse)
    }

    @Test func refusesAVerificationURIThatIsNotHTTP() {
        #expect(
            error(#"{"device_code":"d","user_code":"ABC","verification_uri":"javascript:alert(1)","expires_in":600}"#)?.code
                == .invalidTokenResponse)
        #expect(
            error(#"{"device_code":"d","user_code":"ABC","verification_uri":"/device","expires_in":600}"#)?.code == .invalidTokenResponse)
    }

    @Test func refusesBadNumbers() {
        #expect(
            error(#"{"device_code":"d","user_code":"ABC","verification_uri":"https://e.com/d","expires_in":-5}"#)?.code
                == .invalidTokenResponse)
        #expect(
            error(#"{"device_code":"d","user_code":"ABC","verification_uri":"https://e.com/d","expires_in":600,"interval":"x"}"#)?.code
                == .invalidTokenResponse)
    }

    @Test func providerErrorsKeepTheirCode() {
        #expect(error(#"{"error":"invalid_client","error_description":"unknown client"}"#, status: 401)?.code == .invalidClient)
        #expect(error(#"{"error":"unauthorized_client"}"#)?.code == .unauthorizedClient)
    }

    @Test func statusRulesApply() {
        #expect(error("", status: 500)?.code == .httpError)
        #expect(error("", status: 302)?.code == .unexpectedRedirect)
        #expect(error("", status: 429)?.code == .rateLimited)
    }

    @Test func descriptionRedactsTheDeviceCode() throws {
        let authorization = try parse(
            #"{"device_code":"\#(Self.deviceCode)","user_code":"ABC","verification_uri":"https://e.com/d","expires_in":600}"#)
        #expect(!"\(authorization)".contains(Self.deviceCode))
        #expect("\(authorization)".contains("ABC"))
    }

    @Test func roundTripsThroughJSON() throws {
        let authorization = try parse(
            #"{"device_code":"d","user_code":"ABC","verification_uri":"https://e.com/d","expires_in":600,"interval":7}"#)
        let decoded = try JSONDecoder().decode(DeviceAuthorization.self, from: JSONEncoder().encode(authorization))
        #expect(decoded == authorization)
    }
}
