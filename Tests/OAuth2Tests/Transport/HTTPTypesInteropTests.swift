import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// The library's requests and responses convert to and from swift-http-types'
/// heads, and a client signs an `HTTPTypes.HTTPRequest` as it signs its own.
@Suite struct HTTPTypesInteropTests {
    @Test func aRequestHeadConvertsBothWays() throws {
        var head = HTTPRequest(method: .post, scheme: "https", authority: "api.example:8443", path: "/v1/items?page=2")
        head.headerFields[.contentType] = "application/json"
        head.headerFields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "a"))
        head.headerFields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "b"))
        let request = try HTTPTransportRequest(head, body: Data("{}".utf8), timeout: .seconds(3), redirects: .never)
        #expect(request.method == .post)
        #expect(request.url.absoluteString == "https://api.example:8443/v1/items?page=2")
        #expect(request.headers[values: HTTPField.Name("x-trace")!] == ["a", "b"])
        #expect(request.body == Data("{}".utf8))
        #expect(request.timeout == .seconds(3))
        #expect(request.redirects == .never)
        #expect(request.head == head)
    }

    @Test(arguments: [
        HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/relative"),
        HTTPRequest(method: .get, scheme: "ftp", authority: "files.example", path: "/x"),
        HTTPRequest(method: .options, scheme: nil, authority: nil, path: "*"),
    ])
    func aHeadWithoutAnHTTPURLIsRefused(head: HTTPRequest) {
        #expect(throws: HTTPTransportError.invalidRequest) { try HTTPTransportRequest(head) }
    }

    @Test func aResponseHeadConvertsBothWays() {
        let head = HTTPResponse(status: .created, headerFields: [.location: "/items/7"])
        let response = HTTPTransportResponse(head, body: Data("ok".utf8))
        #expect(response.status == 201)
        #expect(response.headers[.location] == "/items/7")
        #expect(response.head == head)
        #expect(response.bodyText == "ok")
    }

    @Test func aClientSignsAnHTTPTypesRequestAndAnswersWithItsHeadAndBody() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: "{\"name\":\"alice\"}", for: Fixture.apiURL)
        let (response, body) = try await harness.client().send(HTTPRequest(method: .get, url: Fixture.apiURL))
        #expect(response.status == .ok)
        #expect(response.headerFields[.contentType] == "application/json")
        #expect(body == Data("{\"name\":\"alice\"}".utf8))
        let sent = try #require(harness.transport.requests.first)
        #expect(sent.headers[.authorization] == "Bearer \(Fixture.accessToken)")
        #expect(sent.url == Fixture.apiURL)
    }

    @Test func aClientRefusesAnHTTPTypesRequestWithoutAURLAndSendsNothing() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let error = await oauth2Error {
            _ = try await harness.client().send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me"))
        }
        #expect(error?.code == .transportError)
        #expect(harness.transport.requests.isEmpty)
    }
}
