import Testing
@testable import OAuth2

@Suite struct HostAddressTests {
    @Test(arguments: ["id.example", "ID.Example.", "mcp.example.com", "xn--bcher-kva.example", "1.2.3.example", "localhost.example"])
    func namesAreNames(host: String) {
        #expect(HostAddress(host: host[...]) == .name)
    }

    @Test(arguments: ["localhost", "LOCALHOST", "localhost.", "app.localhost"])
    func localhostIsInternal(host: String) {
        #expect(HostAddress(host: host[...]) == .internalAddress)
    }

    @Test(arguments: [
        "127.0.0.1", "127.255.0.9", "10.0.0.5", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "192.0.0.8", "198.18.0.1", "224.0.0.1", "255.255.255.255",
    ])
    func internalIPv4LiteralsAreInternal(host: String) {
        #expect(HostAddress(host: host[...]) == .internalAddress)
    }

    @Test(arguments: ["8.8.8.8", "203.0.113.7", "172.32.0.1", "172.15.255.255", "100.128.0.1", "169.253.1.1", "192.0.1.1"])
    func publicIPv4LiteralsArePublic(host: String) {
        #expect(HostAddress(host: host[...]) == .publicAddress)
    }

    @Test(arguments: [
        "[::1]", "[0:0:0:0:0:0:0:1]", "[::]", "[fe80::1]", "[febf::1]", "[fec0::1]", "[fc00::1]", "[fd12:3456::1]",
        "[ff02::1]", "[::ffff:127.0.0.1]", "[::ffff:a9fe:a9fe]", "[::10.0.0.1]", "[64:ff9b::192.168.0.1]", "[2002:c0a8:0101::1]",
    ])
    func internalIPv6LiteralsAreInternal(host: String) {
        #expect(HostAddress(host: host[...]) == .internalAddress)
    }

    @Test(arguments: ["[2001:db8::1]", "[2606:4700:4700::1111]", "[::ffff:8.8.8.8]", "[64:ff9b::8.8.8.8]", "[2002:0808:0808::1]"])
    func publicIPv6LiteralsArePublic(host: String) {
        #expect(HostAddress(host: host[...]) == .publicAddress)
    }

    /// What `inet_aton` and libcurl read as 127.0.0.1 (or as anything) must not pass for a name.
    @Test(arguments: [
        "127.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "010.0.0.1", "1.2.3", "1.2.3.4.5", "256.1.1.1",
        "1.2.3.04", "[fe80::1%25eth0]", "[::1", "[1:2:3:4:5:6:7:8:9]", "[1::2::3]", "[::ffff:127.1]", "127%2e0%2e0%2e1",
        "example.123",
    ])
    func numericLookingHostsThatAreNotCanonicalAreAmbiguous(host: String) {
        #expect(HostAddress(host: host[...]) == .ambiguous)
    }

    @Test func ipv6ParsesTheForms() {
        #expect(HostAddress.ipv6("::1") == Array(repeating: 0, count: 15) + [1])
        #expect(HostAddress.ipv6("1:2:3:4:5:6:7:8") == [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8])
        #expect(HostAddress.ipv6("1::") == [0, 1] + Array(repeating: 0, count: 14))
        #expect(HostAddress.ipv6("::ffff:1.2.3.4") == Array(repeating: 0, count: 10) + [0xFF, 0xFF, 1, 2, 3, 4])
        #expect(HostAddress.ipv6("1:2:3:4:5:6:7::8") == nil)
        #expect(HostAddress.ipv6("12345::") == nil)
        #expect(HostAddress.ipv6(":1::") == nil)
    }
}
