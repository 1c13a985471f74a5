#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// The rule of DESIGN.md §5: endpoints and every URL a bearer token goes to
/// are `https`, except loopback hosts, which may use `http`.
package enum EndpointPolicy {
    /// Whether the host is a loopback host: `localhost`, 127.0.0.0/8 or `::1`.
    ///
    /// Reads the UTF-8 bytes in place, without building strings: every
    /// signed request asks, so this sits on the hot path.
    package static func isLoopback(host: String?) -> Bool {
        guard var host else { return false }
        return host.withUTF8 { isLoopback(bytes: $0[...]) }
    }

    private static func isLoopback(bytes all: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var bytes = all
        if bytes.first == UInt8(ascii: "["), bytes.last == UInt8(ascii: "]") {
            bytes = bytes.dropFirst().dropLast()
        }
        if spells(bytes, "::1") || spells(bytes, "0:0:0:0:0:0:0:1") {
            return true
        }
        if bytes.equalsIgnoringASCIICase("localhost") {
            return true
        }
        return isLoopbackIPv4(bytes)
    }

    /// Whether the bytes are exactly `word`.
    private static func spells(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ word: StaticString) -> Bool {
        word.withUTF8Buffer { bytes.elementsEqual($0) }
    }

    /// Whether the bytes are a dotted quad `127.a.b.c`, each part 1 to 3 ASCII digits and at most 255.
    ///
    /// A part with a leading 0 is octal to libcurl and the resolver
    /// (`inet_aton`): one holding an 8 or a 9 is no number to them, so they
    /// look the whole host up in DNS, which may answer with any address.
    private static func isLoopbackIPv4(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var octets = 0
        var value = 0
        var digits = 0
        var first = 0
        var octal = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, octets < 3 else { return false }
                if octets == 0 { first = value }
                octets += 1
                value = 0
                digits = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 3 else { return false }
            if digits == 0 { octal = byte == UInt8(ascii: "0") }
            guard !octal || byte <= UInt8(ascii: "7") else { return false }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            guard value <= 255 else { return false }
        }
        // At most three digits each, so a first part worth 127 is spelled "127".
        return octets == 3 && digits > 0 && first == 127
    }

    /// Whether a URL may carry secrets: `https`, or `http` to a loopback host.
    package static func isSecure(_ url: URL) -> Bool {
        guard let scheme = url.scheme else { return false }
        if scheme.utf8.equalsIgnoringASCIICase("https") {
            guard let host = host(of: url) else { return false }
            return !host.isEmpty
        }
        if scheme.utf8.equalsIgnoringASCIICase("http") {
            return isLoopback(host: host(of: url))
        }
        return false
    }

    /// The URL's host, percent-decoded, as `url.host` gives it.
    ///
    /// Reads the host as written when it has no `%`, which is then the same
    /// text: `url.host` decodes it on every call, and every request asks.
    package static func host(of url: URL) -> String? {
        if var written = url.host(percentEncoded: true), !written.withUTF8({ $0.contains(UInt8(ascii: "%")) }) {
            return written
        }
        return url.host
    }
}
