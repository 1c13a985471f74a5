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

    static func isLoopback(bytes all: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
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
        bytes.count == word.utf8CodeUnitCount && word.withUTF8Buffer { bytes.elementsEqual($0) }
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
        // A plain URL is judged on its text in place (HTTPTarget), without the target's host string.
        var text = url.absoluteString
        if let secure = text.withUTF8({ bytes in HTTPTarget.readPlain(bytes).map { $0.isHTTPS || isLoopback(bytes: bytes[$0.host]) } }) {
            return secure
        }
        guard let target = HTTPTarget(parsed: url) else { return false }
        return target.isHTTPS || target.isLoopback
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

/// The scheme, host and port of an `http` or `https` URL: what every request
/// is checked by (``EndpointPolicy/isSecure(_:)``, `CurlTransfer`).
///
/// A plain URL (`http` or `https`, `//`, a host of letters, digits, dots and
/// hyphens, at most a port of digits) is read from the bytes of its
/// `absoluteString`, the text libcurl is handed, in place. Anything else
/// (user info, an IP literal in brackets, a percent, a character beyond
/// ASCII) is read through `URL`, as it always was: its getters build a
/// string on every call, and a signed request is checked twice (in process,
/// preparing a transfer took 0.56 µs with them and 0.37 µs without, `send`
/// 0.97 and 0.90 µs, measured in `make bench`'s in-process rows). A plain URL
/// reads the same either way (the tests compare them, and so does the host
/// fuzz target).
package struct HTTPTarget: Equatable {
    /// `https` (else `http`).
    package let isHTTPS: Bool
    /// The host as `url.host` gives it.
    package let host: Substring
    /// The port, the scheme's default filled in.
    package let port: Int
    /// Whether the host is a loopback host (``EndpointPolicy/isLoopback(host:)``).
    package let isLoopback: Bool

    /// `nil` unless the URL is `http` or `https` with a host; `text` is the
    /// URL's `absoluteString` when the caller has read it already.
    package init?(_ url: URL, text: String? = nil) {
        if let plain = Self(plain: text ?? url.absoluteString) {
            self = plain
        } else {
            self.init(parsed: url)
        }
    }

    /// The target of a plain URL read from its text; `nil` for any other URL.
    package init?(plain text: String) {
        var text = text
        guard
            let (isHTTPS, hostBytes, port, isLoopback) = text.withUTF8({ bytes in
                Self.readPlain(bytes).map { ($0.isHTTPS, $0.host, $0.port, EndpointPolicy.isLoopback(bytes: bytes[$0.host])) }
            })
        else { return nil }
        // The bytes before the host's end are ASCII, so these offsets fall on characters.
        let utf8 = text.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: hostBytes.lowerBound)
        host = text[start..<utf8.index(start, offsetBy: hostBytes.count)]
        self.isHTTPS = isHTTPS
        self.port = port
        self.isLoopback = isLoopback
    }

    /// The target as `URL`'s getters give it; `nil` unless `http` or `https` with a host.
    package init?(parsed url: URL) {
        guard let scheme = url.scheme?.utf8 else { return nil }
        let isHTTPS = scheme.equalsIgnoringASCIICase("https")
        guard isHTTPS || scheme.equalsIgnoringASCIICase("http"), let host = EndpointPolicy.host(of: url), !host.isEmpty else {
            return nil
        }
        self.isHTTPS = isHTTPS
        self.host = host[...]
        port = url.port ?? (isHTTPS ? 443 : 80)
        isLoopback = EndpointPolicy.isLoopback(host: host)
    }

    /// `host:port`, the host lowercased: what the transport counts its connections by.
    package var hostKey: String {
        var host = host
        return host.withUTF8 { bytes in
            // URL reads ports beyond 65535 (libcurl refuses them): those, and hosts beyond ASCII, the long way.
            guard (0...65535).contains(port), bytes.allSatisfy({ $0 < 0x80 }) else { return "\(self.host.lowercased()):\(port)" }
            // In one pass, without the strings `lowercased()` and interpolation build.
            return String(unsafeUninitializedCapacity: bytes.count + 6) { key in // ":" and at most 5 digits
                var count = 0
                for byte in bytes {
                    key[count] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                    count += 1
                }
                key[count] = UInt8(ascii: ":")
                count += 1
                var divisor = 1
                while divisor * 10 <= port { divisor *= 10 }
                while divisor > 0 {
                    key[count] = UInt8(ascii: "0") + UInt8(port / divisor % 10)
                    count += 1
                    divisor /= 10
                }
                return count
            }
        }
    }

    /// Where the host of a plain URL lies in its bytes, and its port.
    static func readPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> (isHTTPS: Bool, host: Range<Int>, port: Int)? {
        let isHTTPS: Bool
        if bytes.count > 5, bytes[..<5].equalsIgnoringASCIICase("https"), bytes[5] == UInt8(ascii: ":") {
            isHTTPS = true
        } else if bytes.count > 4, bytes[..<4].equalsIgnoringASCIICase("http"), bytes[4] == UInt8(ascii: ":") {
            isHTTPS = false
        } else {
            return nil
        }
        var index = isHTTPS ? 6 : 5
        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/") else { return nil }
        index += 2
        let hostStart = index
        while index < bytes.count, isHostByte(bytes[index]) { index += 1 }
        let hostEnd = index
        guard hostEnd > hostStart else { return nil }
        var port = isHTTPS ? 443 : 80
        if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
            index += 1
            let digitsStart = index
            var value = 0
            while index < bytes.count, index - digitsStart < 5, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            guard index > digitsStart, value <= 65535 else { return nil }
            port = value
        }
        // The authority ends here, or the URL is not plain.
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): break
            default: return nil
            }
        }
        return (isHTTPS, hostStart..<hostEnd, port)
    }

    /// A letter, a digit, `.` or `-`: a host name or an IPv4 address as written.
    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
