import Foundation
import HTTPTypes
import OAuth2
import OAuth2OpenAPI
import OAuth2Testing
import OpenAPIRuntime
import Testing

/// ``HTTPTransportClientTransport``'s mapping between the runtime's request and
/// response and the framework's, over a `CannedTransport` that records
/// what would go on the wire.
struct HTTPTransportClientTransportTests {
    let canned = CannedTransport()

    private func request(_ method: HTTPRequest.Method, _ path: String) -> HTTPRequest {
        HTTPRequest(method: method, scheme: nil, authority: nil, path: path)
    }

    @Test(arguments: [
        ("https://api.example", "/api/me?x=1&y=a%20b", "https://api.example/api/me?x=1&y=a%20b"),
        ("https://api.example/v1/", "/api/me", "https://api.example/v1/api/me"),
        ("http://127.0.0.1:8080/base", "/o/userinfo/", "http://127.0.0.1:8080/base/o/userinfo/"),
        ("https://api.example", "/api/me#part", "https://api.example/api/me"),
    ])
    func theURLIsTheServerURLFollowedByThePath(base: String, path: String, expected: String) async throws {
        canned.enqueue(HTTPTransportResponse(status: 204))

        _ = try await HTTPTransportClientTransport(canned).send(
            request(.get, path), body: nil, baseURL: try #require(URL(string: base)), operationID: "op")

        #expect(canned.requests.first?.url.absoluteString == expected)
    }

    @Test func methodHeadersAndBodyGoAsGivenAndTheResponseComesBackWhole() async throws {
        var sent = request(.put, "/things/1")
        sent.headerFields[.contentType] = "application/json"
        sent.headerFields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "a"))
        sent.headerFields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "b"))
        canned.enqueue(
            HTTPTransportResponse(
                status: 201,
                headers: HTTPFields([
                    HTTPField(name: .contentType, value: "application/json"), HTTPField(name: .setCookie, value: "a=1"),
                    HTTPField(name: .setCookie, value: "b=2"),
                ]),
                body: Data(#"{"ok":true}"#.utf8)))

        let (response, body) = try await HTTPTransportClientTransport(canned).send(
            sent, body: HTTPBody(#"{"name":"x"}"#), baseURL: try #require(URL(string: "https://api.example")), operationID: "put")

        let onWire = try #require(canned.requests.first)
        #expect(onWire.method == .put)
        #expect(onWire.headers[values: HTTPField.Name("X-Trace")!] == ["a", "b"])
        #expect(onWire.headers[.contentType] == "application/json")
        #expect(onWire.body == Data(#"{"name":"x"}"#.utf8))
        #expect(response.status.code == 201)
        #expect(response.headerFields[values: .setCookie] == ["a=1", "b=2"])
        #expect(try await String(collecting: try #require(body), upTo: 100) == #"{"ok":true}"#)
    }

    @Test func anEmptyResponseBodyIsNoBody() async throws {
        canned.enqueue(HTTPTransportResponse(status: 204))

        let (response, body) = try await HTTPTransportClientTransport(canned).send(
            request(.delete, "/x"), body: nil, baseURL: try #require(URL(string: "https://api.example")), operationID: "d")

        #expect(response.status == .noContent)
        #expect(body == nil)
    }

    @Test func aBodyOverTheLimitIsRefusedBeforeAnythingIsSent() async throws {
        let transport = HTTPTransportClientTransport(canned, maxRequestBodySize: 4)

        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.send(
                request(.post, "/x"), body: HTTPBody("12345"), baseURL: try #require(URL(string: "https://api.example")),
                operationID: "post")
        }

        #expect(error == .invalidRequest)
        #expect(error?.message.contains("4 bytes") == true)
        #expect(canned.requests.isEmpty)
    }

    @Test(arguments: ["ftp://api.example", "https://api.example?q=1", "file:///tmp"])
    func aServerURLThatIsNotHTTPIsRefused(base: String) async throws {
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await HTTPTransportClientTransport(canned).send(
                request(.get, "/x"), body: nil, baseURL: try #require(URL(string: base)), operationID: "get")
        }

        #expect(error == .unsupportedURL)
        #expect(canned.requests.isEmpty)
    }

    @Test func theInnerTransportsErrorArrivesInTheGeneratedClientsError() async throws {
        canned.enqueue(error: HTTPTransportError.connectFailed)
        let client = Client(serverURL: try #require(URL(string: "https://api.example")), transport: HTTPTransportClientTransport(canned))

        let error = await #expect(throws: ClientError.self) { _ = try await client.getMe() }

        #expect(error?.underlyingError as? HTTPTransportError == .connectFailed)
    }
}
