import Foundation
import Testing
@testable import OAuth2

/// The URL a request object passed by reference is served at (RFC 9101 §5.2,
/// OpenID Connect Core §6.2), and what a hosted object shows of itself.
@Suite struct HostedRequestObjectTests {
    static let id = HostedRequestObject.makeID()

    @Test func theURLIsTheBaseThenTheID() throws {
        let under = { (base: String) throws in try HostedRequestObject.url(under: try #require(URL(string: base)), id: Self.id) }
        #expect(try under("https://app.example/request-objects").absoluteString == "https://app.example/request-objects/\(Self.id)")
        #expect(try under("https://app.example/request-objects/").absoluteString == "https://app.example/request-objects/\(Self.id)")
        #expect(try under("https://app.example").absoluteString == "https://app.example/\(Self.id)")
        #expect(try under("http://127.0.0.1:8080/ro").absoluteString == "http://127.0.0.1:8080/ro/\(Self.id)")
        #expect(try under("http://[::1]:8080/").absoluteString == "http://[::1]:8080/\(Self.id)")
    }

    @Test func anIDIs256RandomBitsAndNeverRepeats() throws {
        let ids = (0..<200).map { _ in HostedRequestObject.makeID() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(Base64URL.decode(id)?.count == 32)
        }
    }

    @Test(arguments: [
        "http://app.example/request-objects",
        "http://127.0.0.1.app.example/ro",
    ])
    func anHTTPBaseToAnotherHostIsInsecure(_ base: String) async throws {
        let error = await oauth2Error { _ = try HostedRequestObject.url(under: try #require(URL(string: base)), id: Self.id) }
        #expect(error?.code == .insecureEndpoint)
    }

    @Test(arguments: [
        "request-objects",
        "/request-objects",
        "ftp://app.example/ro",
        "urn:example:ro",
        "https:///ro",
        "https://app.example/ro?x=1",
        "https://app.example/ro#frag",
        "https://user:pw@app.example/ro",
        "https://app.example/" + String(repeating: "a", count: 512 - 20 - 44 + 1),
    ])
    func aBaseURLThatCannotHostIsRefused(_ base: String) async throws {
        let error = await oauth2Error { _ = try HostedRequestObject.url(under: try #require(URL(string: base)), id: Self.id) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("pw") == false)
    }

    @Test func aURLOfExactly512CharactersIsMade() throws {
        let base = "https://app.example/" + String(repeating: "a", count: 512 - 20 - 44)
        let url = try HostedRequestObject.url(under: try #require(URL(string: base)), id: Self.id)
        #expect(url.absoluteString.utf8.count == 512)
    }

    @Test func itsDescriptionShowsNeitherTheObjectNorTheRandomPart() throws {
        let url = try HostedRequestObject.url(under: try #require(URL(string: "https://app.example/ro")), id: Self.id)
        let object = HostedRequestObject(
            id: Self.id, url: url, jwt: "eyJhbGciOiJSUzI1NiJ9.eyJzdGF0ZSI6InMifQ.c2ln", expiresAt: FlowFixtures.requestedAt)
        for text in [
            "\(object)", String(reflecting: object),
            {
                var out = ""
                dump(object, to: &out)
                return out
            }(),
        ] {
            #expect(!text.contains(object.jwt))
            #expect(!text.contains(Self.id))
        }
        #expect("\(object)".contains("https://app.example/ro/…"))
        #expect(object.contentType == "application/oauth-authz-req+jwt")
        let decoded = try JSONDecoder().decode(HostedRequestObject.self, from: try JSONEncoder().encode(object))
        #expect(decoded == object)
    }
}
