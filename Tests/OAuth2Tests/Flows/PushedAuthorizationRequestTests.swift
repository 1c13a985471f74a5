import Foundation
import Testing
@testable import OAuth2

@Suite struct PushedAuthorizationRequestTests {
    static let requestURI = "urn:ietf:params:oauth:request_uri:6esc_11ACC5bwc014ltc14eY22c"

    private func parse(
        _ body: String, status: HTTPResponse.Status = 201, contentType: String? = "application/json", maxBodySize: Int = 1 << 20
    )
        throws(OAuth2Error) -> PushedAuthorizationRequest.Answer
    {
        try PushedAuthorizationRequest.parse(
            FlowFixtures.json(body, status: status, contentType: contentType), requestedAt: FlowFixtures.requestedAt,
            maxBodySize: maxBodySize)
    }

    private func error(
        _ body: String, status: HTTPResponse.Status = 201, contentType: String? = "application/json", maxBodySize: Int = 1 << 20
    )
        -> OAuth2Error?
    {
        FlowFixtures.error { () throws(OAuth2Error) in try parse(body, status: status, contentType: contentType, maxBodySize: maxBodySize) }
    }

    @Test func readsTheRFC9126Answer() throws {
        let answer = try parse(#"{"request_uri":"\#(Self.requestURI)","expires_in":60}"#)
        #expect(answer.requestURI == Self.requestURI)
        #expect(answer.expiresAt == FlowFixtures.requestedAt.addingTimeInterval(60))
    }

    @Test func acceptsA200AndANumericStringLifetime() throws {
        let answer = try parse(#"{"request_uri":"\#(Self.requestURI)","expires_in":"90"}"#, status: 200)
        #expect(answer.expiresAt == FlowFixtures.requestedAt.addingTimeInterval(90))
    }

    @Test func clampsAnAbsurdLifetimeToADay() throws {
        let answer = try parse(#"{"request_uri":"\#(Self.requestURI)","expires_in":1e12}"#)
        #expect(answer.expiresAt == FlowFixtures.requestedAt.addingTimeInterval(86_400))
    }

    @Test func refusesASuccessOtherThan201Or200() {
        let body = #"{"request_uri":"\#(Self.requestURI)","expires_in":60}"#
        for status: HTTPResponse.Status in [202, 204, 206] {
            let error = error(body, status: status)
            #expect(error?.code == .invalidPushedAuthorizationResponse)
            #expect(error?.httpStatus == status.code)
        }
    }

    @Test func refusesAnAnswerWithoutAUsableRequestURI() {
        for body in [
            #"{"expires_in":60}"#,
            #"{"request_uri":null,"expires_in":60}"#,
            #"{"request_uri":42,"expires_in":60}"#,
            #"{"request_uri":["urn:x"],"expires_in":60}"#,
            #"{"request_uri":"","expires_in":60}"#,
            #"{"request_uri":"no-scheme","expires_in":60}"#,
            #"{"request_uri":"urn:a b","expires_in":60}"#,
            #"{"request_uri":"urn:\u00e9","expires_in":60}"#,
            #"{"request_uri":"urn:a\r\nSet-Cookie: x","expires_in":60}"#,
            #"{"request_uri":"urn:\#(String(repeating: "a", count: 5000))","expires_in":60}"#,
        ] {
            #expect(error(body)?.code == .invalidPushedAuthorizationResponse, "\(body.prefix(60))")
        }
    }

    @Test func refusesAnAnswerWithoutAPositiveLifetime() {
        for lifetime in ["", #","expires_in":0"#, #","expires_in":-5"#, #","expires_in":"soon""#, #","expires_in":true"#] {
            #expect(error(#"{"request_uri":"\#(Self.requestURI)"\#(lifetime)}"#)?.code == .invalidPushedAuthorizationResponse)
        }
    }

    @Test func refusesABodyThatIsNotAJSONObject() {
        #expect(error("[]")?.code == .invalidPushedAuthorizationResponse)
        #expect(error("not json")?.code == .invalidPushedAuthorizationResponse)
        #expect(error("<html></html>", contentType: "text/html")?.code == .invalidPushedAuthorizationResponse)
    }

    @Test func refusesAnOversizedAnswer() {
        let body = #"{"request_uri":"\#(Self.requestURI)","expires_in":60,"pad":"\#(String(repeating: "x", count: 200))"}"#
        #expect(error(body, maxBodySize: 100)?.code == .responseTooLarge)
    }

    @Test func reportsTheProvidersError() {
        let error = error(#"{"error":"invalid_request","error_description":"redirect_uri not registered"}"#, status: 400)
        #expect(error?.code == .invalidRequest)
        #expect(error?.errorDescription == "redirect_uri not registered")
        #expect(self.error(#"{"error":"invalid_client"}"#, status: 401)?.code == .invalidClient)
        #expect(self.error("", status: 500)?.code == .httpError)
        #expect(self.error("", status: 307)?.code == .unexpectedRedirect)
        #expect(self.error("", status: 429)?.code == .rateLimited)
    }

    @Test func anErrorObjectInASuccessIsTheProvidersError() {
        #expect(error(#"{"error":"access_denied"}"#)?.code == .accessDenied)
    }

    @Test func thePushIsAnAuthenticatedFormPostToTheEndpoint() throws {
        var configuration = try FlowFixtures.configuration()
        configuration.pushedAuthorizationRequestEndpoint = URL(string: "https://id.example.com/oauth/par")
        let request = try PushedAuthorizationRequest.request(
            parameters: [("response_type", "code"), ("client_id", "client-id")], configuration: configuration, now: FlowFixtures.requestedAt
        )
        #expect(request.method == .post)
        #expect(request.url == URL(string: "https://id.example.com/oauth/par"))
        #expect(request.redirects == .never)
        #expect(request.headers[.contentType] == "application/x-www-form-urlencoded")
        #expect(request.headers[.authorization]?.hasPrefix("Basic ") == true)
        // client_id once: the authorization parameters carry it (RFC 9126 §2.1).
        #expect(String(decoding: request.body ?? Data(), as: UTF8.self) == "response_type=code&client_id=client-id")
    }

    @Test func thePushNeedsItsEndpoint() throws {
        let configuration = try FlowFixtures.configuration()
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try PushedAuthorizationRequest.request(parameters: [], configuration: configuration, now: FlowFixtures.requestedAt)
        }
        #expect(error?.code == .invalidConfiguration)
    }
}
