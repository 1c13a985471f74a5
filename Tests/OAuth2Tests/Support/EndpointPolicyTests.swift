import Foundation
import Testing
@testable import OAuth2

@Suite struct EndpointPolicyTests {
    @Test(arguments: [
        "localhost", "LocalHost", "127.0.0.1", "127.255.255.255", "127.000.0.01", "::1", "[::1]",
        "0:0:0:0:0:0:0:1", "[0:0:0:0:0:0:0:1]",
    ])
    func acceptsLoopbackHosts(_ host: String) {
        #expect(EndpointPolicy.isLoopback(host: host))
    }

    @Test(arguments: [
        "", "example.com", "localhost.example.com", "127.0.0", "127.0.0.1.1", "127.0.0.256", "127.0.0.",
        "127..0.1", "128.0.0.1", "127.0.0.1000", "127.0.0.-1", "127.0.0.+1", "[::1", "::1]", "::2", "[]",
        "１２７.0.0.1", "127.0.0.１",
    ])
    func refusesOtherHosts(_ host: String) {
        #expect(!EndpointPolicy.isLoopback(host: host))
    }

    // Found by the host fuzz target (Fuzz/Corpus/host/octal-8): a part with a
    // leading 0 is octal to libcurl and the resolver (inet_aton), and "018" is
    // no octal number, so "127.0.0.018" is a name they look up in DNS, which
    // may answer with any address: it must not count as loopback (http).
    @Test(arguments: ["127.0.0.018", "127.08.0.1", "127.0.09.1", "127.00.0.09"])
    func refusesLeadingZeroPartsThatAreNotOctal(_ host: String) throws {
        #expect(!EndpointPolicy.isLoopback(host: host))
        #expect(!EndpointPolicy.isSecure(try #require(URL(string: "http://\(host):8080/token"))))
    }

    @Test func refusesAMissingHost() {
        #expect(!EndpointPolicy.isLoopback(host: nil))
    }

    @Test(arguments: [
        "https://idp.example/token", "HTTPS://idp.example/token", "http://127.0.0.1:8080/token",
        "HTTP://localhost/token", "http://[::1]:9000/token",
    ])
    func acceptsHTTPSAndLoopbackHTTP(_ text: String) throws {
        #expect(EndpointPolicy.isSecure(try #require(URL(string: text))))
    }

    @Test(arguments: ["http://idp.example/token", "ftp://127.0.0.1/token", "file:///etc/passwd", "https:///token"])
    func refusesEverythingElse(_ text: String) throws {
        #expect(!EndpointPolicy.isSecure(try #require(URL(string: text))))
    }

    // HTTPTarget reads a plain URL from its text, anything else through URL's
    // getters; a plain URL must read the same both ways, or the fast path
    // would judge (or count connections for) another host than URL does.
    @Test(arguments: [
        "http://127.0.0.1:8080/token", "https://idp.example/token", "HTTPS://IdP.Example:8443/a?b#c", "http://localhost",
        "http://LOCALHOST:1/", "https://api.example.com?x=1", "https://api.example.com#frag", "http://127.000.0.01:0080/",
        "http://127.0.0.018/", "http://a-b.c.d.example:65535/x", "https://idp.example./", "http://0:1/", "https://xn--bcher-kva.example/",
        "http://1.2.3.4:80/path/with%20escape", "http://127.0.0.1:0/",
        "http://b\u{FC}cher.example/", // URL writes the host in punycode
    ])
    func readsAPlainURLAsURLDoes(_ text: String) throws {
        let url = try #require(URL(string: text))
        let plain = try #require(HTTPTarget(plain: url.absoluteString), "\(text) is plain")
        let parsed = try #require(HTTPTarget(parsed: url))
        #expect(plain == parsed)
        #expect(plain.hostKey == "\(parsed.host.lowercased()):\(parsed.port)")
        #expect(HTTPTarget(url) == parsed)
    }

    // Whatever the text reader does not know it leaves to URL: user info (the
    // host is after the last @), IP literals, percent-escapes, ports out of
    // range, other schemes.
    @Test(arguments: [
        "http://127.0.0.1@evil.example/", "http://evil.example@127.0.0.1/", "http://user:pw@127.0.0.1:8080/", "http://[::1]:9000/",
        "http://127.0.0.1:99999/", "http://127.0.0.1:/", "http://%31%32%37.0.0.1/",
        "http://127.0.0.1_x/", "ftp://127.0.0.1/", "https:///token", "http:/127.0.0.1/", "http://127.0.0.1:80x/",
        "http://127.0.0.1:8080:90/", "httpx://127.0.0.1/",
    ])
    func leavesAnyOtherURLToURL(_ text: String) throws {
        #expect(HTTPTarget(plain: text) == nil)
        // Where URL takes the text too, the target is URL's reading of it.
        guard let url = URL(string: text) else { return }
        #expect(HTTPTarget(plain: url.absoluteString) == nil)
        #expect(HTTPTarget(url) == HTTPTarget(parsed: url))
        #expect(EndpointPolicy.isSecure(url) == (HTTPTarget(parsed: url).map { $0.isHTTPS || $0.isLoopback } ?? false))
    }

    // A URL relative to a base: its absoluteString, which libcurl is handed,
    // is the resolved one, and so is what URL's getters read.
    @Test(arguments: [
        ("/token", "https://idp.example/a/b"), ("//127.0.0.1:9/x", "https://idp.example/"), ("c?d", "http://localhost:8080/a/b"),
        ("//user@127.0.0.1/", "http://localhost/"),
    ])
    func readsARelativeURLAsResolved(_ reference: String, _ base: String) throws {
        let url = try #require(URL(string: reference, relativeTo: URL(string: base)))
        #expect(HTTPTarget(url) == HTTPTarget(parsed: url))
        #expect(HTTPTarget(url) == HTTPTarget(parsed: url.absoluteURL))
    }

    @Test(arguments: [
        ("HTTPS://API.Example.COM/v1", "api.example.com:443"), ("http://Localhost/", "localhost:80"),
        ("http://127.0.0.1:8/", "127.0.0.1:8"), ("http://127.0.0.1:10000/", "127.0.0.1:10000"), ("http://[::1]:9000/", "::1:9000"),
        // Found by the host fuzz target (Fuzz/Corpus/host/port-beyond-65535):
        // URL reads a port libcurl refuses, and the key has room for its digits.
        ("HTTP://LOCALHOTS:6553565533", "localhots:6553565533"), ("http://127.0.0.1:65536/", "127.0.0.1:65536"),
    ])
    func countsConnectionsByTheLowercasedHostAndThePort(_ text: String, _ key: String) throws {
        let url = try #require(URL(string: text))
        #expect(HTTPTarget(url)?.hostKey == key)
    }
}
