#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The parts of an absolute URI as RFC 3986 §3 splits it, without decoding
/// or normalising anything.
///
/// Used where Foundation's `URL` would be too forgiving or would rewrite the
/// text (percent-encoding "invalid" characters): comparing a redirect with the
/// redirect URI that was sent, and building the RFC 8414 well-known URL.
package struct URLParts: Equatable {
    /// The scheme as written; compare it case-insensitively.
    package var scheme: Substring
    /// The userinfo before `@`, when there is one.
    package var userinfo: Substring?
    /// The host (an IPv6 literal keeps its brackets); `nil` when the URI has no authority.
    package var host: Substring?
    /// The port digits; `nil` or empty when not given.
    package var port: Substring?
    /// The path, possibly empty.
    package var path: Substring
    /// The query without its `?`, when there is one.
    package var query: Substring?
    /// The fragment without its `#`, when there is one.
    package var fragment: Substring?

    /// Splits an absolute URI; `nil` when it has no valid scheme, has a
    /// malformed port, or contains a space, a control character or DEL.
    package init?(_ text: Substring) {
        guard let colon = text.firstIndex(of: ":"), colon > text.startIndex else { return nil }
        let scheme = text[..<colon]
        guard let first = scheme.utf8.first, Self.isAlpha(first),
            scheme.utf8.allSatisfy({
                Self.isAlpha($0) || Self.isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
            })
        else { return nil }
        guard !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        self.scheme = scheme

        var rest = text[text.index(after: colon)...]
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        if rest.hasPrefix("//") {
            let afterSlashes = rest.index(rest.startIndex, offsetBy: 2)
            let authorityEnd = rest[afterSlashes...].firstIndex(of: "/") ?? rest.endIndex
            var hostAndPort = rest[afterSlashes..<authorityEnd]
            if let at = hostAndPort.lastIndex(of: "@") {
                userinfo = hostAndPort[..<at]
                hostAndPort = hostAndPort[hostAndPort.index(after: at)...]
            }
            if hostAndPort.hasPrefix("[") {
                guard let close = hostAndPort.firstIndex(of: "]") else { return nil }
                host = hostAndPort[...close]
                let afterHost = hostAndPort[hostAndPort.index(after: close)...]
                if !afterHost.isEmpty {
                    guard afterHost.hasPrefix(":") else { return nil }
                    port = afterHost.dropFirst()
                }
            } else if let portColon = hostAndPort.lastIndex(of: ":") {
                host = hostAndPort[..<portColon]
                port = hostAndPort[hostAndPort.index(after: portColon)...]
            } else {
                host = hostAndPort
            }
            if let port, !port.utf8.allSatisfy(Self.isDigit) { return nil }
            path = rest[authorityEnd...]
        } else {
            path = rest
        }
    }

    /// The port, or the scheme's default (80 for http, 443 for https); `nil` when neither is known or the port is out of range.
    package var effectivePort: Int? {
        if let port, !port.isEmpty {
            guard port.count <= 5, let value = Int(port), value <= 65535 else { return nil }
            return value
        }
        switch scheme.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    /// Whether the scheme is `http` or `https`, in any case.
    package var isHTTP: Bool {
        let lowered = scheme.lowercased()
        return lowered == "http" || lowered == "https"
    }

    /// `scheme://host[:port]` of an `http(s)` URL with a host, scheme and host
    /// lower-cased and the scheme's default port left out (RFC 3986 §6.2.2–6.2.3);
    /// `nil` for anything else. A DPoP proof's `htu` starts with it, and DPoP
    /// nonces are kept per origin by it.
    package var normalizedHTTPOrigin: String? {
        guard isHTTP, let host, !host.isEmpty else { return nil }
        let scheme = scheme.lowercased()
        var origin = "\(scheme)://\(host.lowercased())"
        if let port, !port.isEmpty, !(scheme == "https" && port == "443"), !(scheme == "http" && port == "80") {
            origin += ":\(port)"
        }
        return origin
    }

    /// The path, with the empty path of an `http(s)` URL read as `/` (RFC 3986 §6.2.3).
    var normalizedPath: Substring {
        path.isEmpty && isHTTP ? "/" : path
    }

    private static func isAlpha(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
