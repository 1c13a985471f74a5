import Foundation
import Testing
@testable import OAuth2

@Suite struct URLRedactionTests {
    @Test(arguments: [
        ("https://user:secret@idp.example/token", "https://idp.example/token"),
        ("https://user:secret@idp.example:8443/token?code=abc#frag", "https://idp.example:8443/token?…"),
        ("https://a@b@idp.example/x", "https://idp.example/x"),
        ("https://idp.example/p@th?x=1", "https://idp.example/p@th?…"),
        ("https://idp.example", "https://idp.example"),
        ("http://127.0.0.1:8080/cb#state=s", "http://127.0.0.1:8080/cb?…"),
    ])
    func userinfoQueryAndFragmentNeverReachAMessage(url: String, shown: String) throws {
        let parsed = try #require(URL(string: url))
        #expect(parsed.redactedForMessages() == shown)
        #expect(!parsed.redactedForMessages().contains("secret"))
    }

    @Test func theCLIsFormLeavesNoMarker() throws {
        let url = try #require(URL(string: "https://u:p@api.example/me?x=1"))
        #expect(url.redactedForMessages(marksQuery: false) == "https://api.example/me")
    }

    @Test func anErrorAboutAnInsecureEndpointShowsNoUserinfo() throws {
        let url = try #require(URL(string: "http://user:hunter2@api.example/me"))
        let error = try #require(throws: OAuth2Error.self) { try EndpointPolicy.requireSecure(url, role: "URL a bearer token is sent to") }
        #expect(!error.message.contains("hunter2"))
        #expect(!error.message.contains("user"))
    }
}
