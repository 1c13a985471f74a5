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
}
