import Testing
@testable import OAuth2

@Suite struct URLPartsTests {
    @Test func splitsEveryComponent() throws {
        let parts = try #require(URLParts("https://user:pw@Host.Example:8443/a/b?x=1&y=2#frag"))
        #expect(parts.scheme == "https")
        #expect(parts.userinfo == "user:pw")
        #expect(parts.host == "Host.Example")
        #expect(parts.port == "8443")
        #expect(parts.path == "/a/b")
        #expect(parts.query == "x=1&y=2")
        #expect(parts.fragment == "frag")
        #expect(parts.effectivePort == 8443)
    }

    @Test func readsIPv6LiteralsWithTheirPort() throws {
        let parts = try #require(URLParts("http://[::1]:8080/cb"))
        #expect(parts.host == "[::1]")
        #expect(parts.effectivePort == 8080)
    }

    @Test func usesDefaultPortsAndNormalisesTheEmptyPath() throws {
        let https = try #require(URLParts("https://example.com"))
        #expect(https.effectivePort == 443)
        #expect(https.normalizedPath == "/")
        #expect(try #require(URLParts("http://example.com:/x")).effectivePort == 80)
        #expect(try #require(URLParts("com.example.app:/cb")).effectivePort == nil)
    }

    @Test func readsAURIWithoutAuthority() throws {
        let parts = try #require(URLParts("com.example.app:/oauth2redirect?code=1"))
        #expect(parts.host == nil)
        #expect(parts.path == "/oauth2redirect")
        #expect(parts.query == "code=1")
    }

    @Test func aQuestionMarkInTheFragmentIsPartOfTheFragment() throws {
        let parts = try #require(URLParts("https://example.com/cb#a?b"))
        #expect(parts.query == nil)
        #expect(parts.fragment == "a?b")
    }

    @Test func refusesWhatIsNotAnAbsoluteURI() {
        for text in [
            "", "/path", "example.com/x", "1http://x", ":x", "ht tp://x", "https://x/a b", "https://x/\u{7F}", "https://x:80a/",
            "https://[::1/x", "https://[::1]x/",
        ] {
            #expect(URLParts(text[...]) == nil, "\(text)")
        }
    }

    @Test func outOfRangePortHasNoEffectivePort() throws {
        #expect(try #require(URLParts("https://x:65536/")).effectivePort == nil)
        #expect(try #require(URLParts("https://x:65535/")).effectivePort == 65535)
    }
}
