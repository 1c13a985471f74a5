import Foundation
import HTTPTypes
import OAuth2Testing
import Testing
@testable import OAuth2

/// OpenID Provider Issuer Discovery (OpenID Connect Discovery 1.0 §2) by
/// WebFinger (RFC 7033): normalization, the request, and what is refused.
@Suite struct OpenIDIssuerTests {
    /// Discovery §2.1's rules, with its Appendix A examples (A.1 e-mail
    /// syntax, A.2 URL syntax, A.3 host and port, A.4 acct URI with a
    /// percent-encoded `@`) and the other cases the rules decide: a port, a
    /// path or a query turns `user@host` into an https URL; an explicit
    /// scheme is kept as written; a fragment is dropped.
    @Test(arguments: [
        ("joe@example.com", "acct:joe@example.com", "example.com"), // A.1
        ("https://example.com/joe", "https://example.com/joe", "example.com"), // A.2
        ("example.com:8080", "https://example.com:8080", "example.com:8080"), // A.3
        (
            "acct:juliet%40capulet.example@shopping.example.com", "acct:juliet%40capulet.example@shopping.example.com",
            "shopping.example.com"
        ), // A.4
        ("example.com", "https://example.com", "example.com"),
        ("example.com/path", "https://example.com/path", "example.com"),
        ("example.com?query", "https://example.com?query", "example.com"),
        ("example.com#fragment", "https://example.com", "example.com"),
        ("example.com:8080/path?query#fragment", "https://example.com:8080/path?query", "example.com:8080"),
        ("http://example.com", "http://example.com", "example.com"),
        ("http://example.com:8080/path?query#fragment", "http://example.com:8080/path?query", "example.com:8080"),
        ("nov@example.com", "acct:nov@example.com", "example.com"),
        ("nov@example.com:8080", "https://nov@example.com:8080", "example.com:8080"),
        ("nov@example.com/path", "https://nov@example.com/path", "example.com"),
        ("nov@example.com?query", "https://nov@example.com?query", "example.com"),
        ("nov@example.com#fragment", "acct:nov@example.com", "example.com"),
        ("nov@example.com:8080/path?query#fragment", "https://nov@example.com:8080/path?query", "example.com:8080"),
        ("acct:nov@example.com", "acct:nov@example.com", "example.com"),
        ("acct:nov@example.com:8080", "acct:nov@example.com:8080", "example.com:8080"),
        ("acct:nov@example.com/path", "acct:nov@example.com/path", "example.com"),
        ("acct:nov@example.com#fragment", "acct:nov@example.com", "example.com"),
        ("ACCT:nov@example.com", "ACCT:nov@example.com", "example.com"),
        ("https://nov@example.com:8080/path", "https://nov@example.com:8080/path", "example.com:8080"),
        ("  joe@example.com\n", "acct:joe@example.com", "example.com"),
        ("joe@[2001:db8::1]", "acct:joe@[2001:db8::1]", "[2001:db8::1]"),
    ])
    func identifiersAreNormalizedAsDiscoverySection2Says(identifier: String, resource: String, host: String) throws {
        let normalized = try WebFingerLookup.normalize(identifier)
        #expect(normalized.resource == resource)
        #expect(String(normalized.authority) == host)
    }

    @Test(arguments: [
        "", "   ", "@example.com", "acct:example.com", "acct:@example.com", "mailto:joe@example.com", "xri://=joe",
        "joe smith@example.com", "jöe@example.com", "joe@example.com\u{7F}", "https:///path", "https://",
        String(repeating: "a", count: 1020) + "@x.example",
    ])
    func unusableIdentifiersAreRefused(identifier: String) async throws {
        let transport = CannedTransport()
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await OpenIDIssuer.webFinger(identifier, transport: transport)
        }
        #expect(error?.code == .invalidIdentifier)
        #expect(transport.requests.isEmpty)
    }

    /// RFC 7033 §4: GET on the host's `/.well-known/webfinger`, the resource
    /// and the issuer `rel` percent-encoded; over https, no redirect, the
    /// rules' size limit; the issuer returned as written.
    @Test func theLookupAsksTheIdentifiersHostForTheIssuerRelation() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json:
                #"{"subject": "acct:joe@example.com", "links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://server.example.com"}]}"#,
            headers: [.contentType: "application/jrd+json"])
        let issuer = try await OpenIDIssuer.webFinger("joe@example.com", rules: DiscoveryRules(maxDocumentSize: 4096), transport: transport)
        #expect(issuer == "https://server.example.com")
        let request = try #require(transport.requests.first)
        #expect(request.method == .get)
        #expect(
            request.url.absoluteString
                == "https://example.com/.well-known/webfinger?resource=acct%3Ajoe%40example.com&rel=http%3A%2F%2Fopenid.net%2Fspecs%2Fconnect%2F1.0%2Fissuer"
        )
        #expect(request.redirects == .never)
        #expect(request.maxResponseSize == 4096)
        #expect(request.headers[.accept]?.contains("application/jrd+json") == true)
    }

    /// RFC 7033 §9.1 forbids falling back to http: an `http:` identifier is
    /// still looked up over https, unless its host is loopback.
    @Test func anHTTPIdentifierIsLookedUpOverHTTPS() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://example.com"}]}"#)
        _ = try await OpenIDIssuer.webFinger("http://example.com/joe", transport: transport)
        #expect(
            transport.requests.first?.url.absoluteString.hasPrefix(
                "https://example.com/.well-known/webfinger?resource=http%3A%2F%2Fexample.com%2Fjoe&") == true)
    }

    @Test func aLoopbackHostIsAskedOverHTTPWhenTheRulesAllowPrivateHosts() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "http://127.0.0.1:8080/op"}]}"#)
        let issuer = try await OpenIDIssuer.webFinger(
            "acct:me@127.0.0.1:8080", rules: DiscoveryRules(allowsPrivateAuthorizationServers: true), transport: transport)
        #expect(issuer == "http://127.0.0.1:8080/op")
        #expect(transport.requests.first?.url.absoluteString.hasPrefix("http://127.0.0.1:8080/.well-known/webfinger?") == true)
    }

    /// A loopback host may use http (the library's rule), but an identifier
    /// that says https, or has no scheme (§2.1 assumes https), is asked over https.
    @Test(arguments: ["https://127.0.0.1:8443/me", "localhost:8443/me"])
    func aLoopbackIdentifierThatSaysHTTPSIsAskedOverHTTPS(identifier: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://localhost:8443/op"}]}"#)
        _ = try await OpenIDIssuer.webFinger(
            identifier, rules: DiscoveryRules(allowsPrivateAuthorizationServers: true), transport: transport)
        let url = try #require(transport.requests.first?.url.absoluteString)
        #expect(url.hasPrefix("https://") && url.contains("8443/.well-known/webfinger?"), "\(url)")
    }

    /// A server that takes identifiers from its users must not be pointed at
    /// its own network by one.
    @Test(arguments: ["joe@localhost", "joe@127.0.0.1", "https://10.0.0.1/joe", "joe@[::1]", "joe@169.254.169.254", "joe@0x7f000001"])
    func anInternalWebFingerHostIsRefusedByDefault(identifier: String) async throws {
        let transport = CannedTransport()
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await OpenIDIssuer.webFinger(identifier, transport: transport)
        }
        #expect(error?.code == .invalidIdentifier)
        #expect(transport.requests.isEmpty)
    }

    @Test func theFirstIssuerLinkIsTakenAndOtherRelationsAreSkipped() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json: """
                {"links": [{"rel": "http://webfinger.net/rel/avatar", "href": "https://example.com/a.png"}, "junk",
                 {"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://first.example"},
                 {"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://second.example"}]}
                """)
        #expect(try await OpenIDIssuer.webFinger("joe@example.com", transport: transport) == "https://first.example")
    }

    /// Each answer the issuer cannot be read from, or names an issuer the
    /// library does not go to: `webfinger_failed`.
    @Test(arguments: [
        ("[]", "application/jrd+json"),
        ("<html></html>", "text/html"),
        (#"{"subject": "acct:joe@example.com"}"#, "application/jrd+json"),
        (#"{"links": {"rel": "http://openid.net/specs/connect/1.0/issuer"}}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://webfinger.net/rel/profile-page", "href": "https://example.com"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": 7}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "http://id.example"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "http://127.0.0.1/op"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://10.1.2.3/op"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://user@id.example"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://id.example#x"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://id.example?x=1"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "/relative"}]}"#, "application/jrd+json"),
        (#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "ftp://id.example"}]}"#, "application/jrd+json"),
    ])
    func unusableAnswersAreRefused(body: String, contentType: String) async throws {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: .ok, headers: [.contentType: contentType], body: Data(body.utf8)))
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await OpenIDIssuer.webFinger("joe@example.com", transport: transport)
        }
        #expect(error?.code == .webFingerFailed)
    }

    @Test func anIssuerOutsideTheAllowedServersIsRefused() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://other.example"}]}"#)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await OpenIDIssuer.webFinger(
                "joe@example.com", rules: DiscoveryRules(allowedAuthorizationServers: ["https://id.example"]), transport: transport)
        }
        #expect(error?.code == .webFingerFailed)
    }

    @Test func aLoopbackHTTPIssuerFromALoopbackHostIsTaken() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "http://localhost:9000/op"}]}"#)
        let rules = DiscoveryRules(allowsPrivateAuthorizationServers: true)
        #expect(
            try await OpenIDIssuer.webFinger("http://127.0.0.1:9000/me", rules: rules, transport: transport) == "http://localhost:9000/op")
    }

    @Test func theHostsStatusErrorsKeepTheirCodes() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: .notFound)
        transport.enqueue(HTTPTransportResponse(status: .found, headers: [.location: "https://evil.example/"], body: Data()))
        var codes: [OAuth2Error.Code?] = []
        for _ in 0..<2 {
            let error = await #expect(throws: OAuth2Error.self) {
                _ = try await OpenIDIssuer.webFinger("joe@example.com", transport: transport)
            }
            codes.append(error?.code)
        }
        #expect(codes == [.httpError, .unexpectedRedirect])
    }

    @Test func anAnswerOverTheSizeLimitIsRefused() async throws {
        let transport = CannedTransport()
        let padding = String(repeating: " ", count: 200)
        transport.enqueue(
            json: #"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://id.example"}]}"# + padding)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await OpenIDIssuer.webFinger("joe@example.com", rules: DiscoveryRules(maxDocumentSize: 128), transport: transport)
        }
        #expect(error?.code == .responseTooLarge)
    }
}
