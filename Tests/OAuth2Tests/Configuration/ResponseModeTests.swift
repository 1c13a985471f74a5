import Foundation
import Testing
@testable import OAuth2

@Suite struct ResponseModeTests {
    static func parameters(of pending: PendingAuthorization) throws -> [(String, String)] {
        try FormURLEncoding.decode(try #require(pending.url.query)[...])
    }

    @Test func aConfiguredResponseModeIsSentOnce() throws {
        var configuration = try FlowFixtures.configuration()
        configuration.responseMode = .formPost
        let pending = try AuthorizationRequestBuilder.make(
            configuration: configuration, redirectURI: FlowFixtures.redirectURI, scopes: ["name"], additionalParameters: [],
            now: FlowFixtures.requestedAt)
        #expect(try Self.parameters(of: pending).filter { $0.0 == "response_mode" }.map(\.1) == ["form_post"])
    }

    @Test func noneIsSentByDefaultAndAnAdditionalOneMayNotRepeatIt() throws {
        var configuration = try FlowFixtures.configuration()
        let plain = try AuthorizationRequestBuilder.make(
            configuration: configuration, redirectURI: FlowFixtures.redirectURI, scopes: [], additionalParameters: [],
            now: FlowFixtures.requestedAt)
        #expect(try Self.parameters(of: plain).contains { $0.0 == "response_mode" } == false)
        configuration.responseMode = .query
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try AuthorizationRequestBuilder.make(
                configuration: configuration, redirectURI: FlowFixtures.redirectURI, scopes: [],
                additionalParameters: [("response_mode", "fragment")], now: FlowFixtures.requestedAt)
        }
        #expect(error?.code == .invalidConfiguration)
    }
}
