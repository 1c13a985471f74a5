import Foundation
import HTTPTypes
import OAuth2
import OAuth2Testing
import Testing

/// An app that imports both OAuth2 and swift-http-types writes the HTTP types'
/// names bare (`HTTPRequest`, `HTTPResponse`, `HTTPFields`, `HTTPField`) and
/// hands them to OAuth2's API. Were OAuth2 or OAuth2Testing to declare a type
/// of one of those names, this file would no longer build: the name would be
/// ambiguous, or would name the other type, which `OAuth2Client.send` does not
/// take. So no name here is written `HTTPTypes.…`.
struct UnqualifiedHTTPTypesTests {
    let tokenURL = URL(string: "https://idp.example/token")!
    let itemsURL = URL(string: "https://api.example/v1/items")!

    /// An app's own request, built from its own values.
    private func createItem(_ fields: HTTPFields) -> HTTPRequest {
        HTTPRequest(method: .post, scheme: "https", authority: "api.example", path: "/v1/items", headerFields: fields)
    }

    @Test func aRequestWrittenWithTheBareNamesIsSignedAfterARefreshAndAnswered() async throws {
        let clock = ManualClock()
        let transport = CannedTransport()
        let store = InMemoryTokenStore(tokens: [
            "alice": AccessToken(accessToken: Secret("old"), expiresAt: clock.now().addingTimeInterval(3600), refreshToken: Secret("r1"))
        ])
        let configuration = try OAuth2Configuration(clientID: "my-app", clientSecret: .opaque("test-secret"), tokenEndpoint: tokenURL)
        let client = try OAuth2Provider(configuration: configuration, store: store, transport: transport, clock: clock)
            .client(account: "alice")
        clock.advance(by: .seconds(3600))
        transport.enqueue(json: #"{"access_token":"new","token_type":"Bearer","expires_in":3600}"#, for: tokenURL)
        let created: HTTPFields = [.contentType: "application/json", .location: "/v1/items/7"]
        transport.enqueue(
            HTTPTransportResponse(HTTPResponse(status: .created, headerFields: created), body: Data(#"{"id":7}"#.utf8)), for: itemsURL)
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields.append(HTTPField(name: .accept, value: "application/json"))

        let (response, body): (HTTPResponse, Data) = try await client.send(createItem(fields), body: Data(#"{"name":"x"}"#.utf8))

        #expect(response.status == .created)
        #expect(response.headerFields[.location] == "/v1/items/7")
        #expect(body == Data(#"{"id":7}"#.utf8))
        #expect(transport.requests(for: tokenURL).count == 1)
        let sent = try #require(transport.requests(for: itemsURL).first)
        #expect(sent.method == .post)
        #expect(sent.headers[.authorization] == "Bearer new")
        #expect(sent.headers[.contentType] == "application/json")
        #expect(sent.headers[.accept] == "application/json")
        #expect(sent.body == Data(#"{"name":"x"}"#.utf8))
    }
}
