/// What a URL's host is, read from its text alone: the string check behind
/// discovery's SSRF rule (a public resource cannot send the client to an
/// internal address).
///
/// Only what is written is judged: a name is a ``name`` whatever it resolves
/// to, so a DNS name that resolves to a private address is not caught here.
package enum HostAddress: Equatable, Sendable {
    /// A DNS name other than `localhost` (or a name under `.localhost`).
    case name
    /// An IP literal outside every range of ``internalAddress``.
    case publicAddress
    /// `localhost`, or an IP literal that is loopback, private, link-local,
    /// unique-local, shared (carrier-grade NAT), unspecified, multicast or
    /// reserved, including such an IPv4 address inside an IPv6 one (mapped,
    /// compatible, NAT64, 6to4).
    case internalAddress
    /// A host that looks numeric but is not a canonical dotted quad or a plain
    /// bracketed IPv6 literal (`127.1`, `0x7f000001`, `2130706433`, `010.0.0.1`,
    /// a zone id): resolvers read those as addresses of their own choosing.
    case ambiguous

    /// Classifies a host as ``URLParts`` gives it (an IPv6 literal in brackets).
    package init(host: Substring) {
        var host = host
        // A percent-encoded host is decoded by some parsers and not others: no one reading to trust.
        guard !host.contains("%") else {
            self = .ambiguous
            return
        }
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), let bytes = Self.ipv6(host.dropFirst().dropLast()) else {
                self = .ambiguous
                return
            }
            self = Self.isInternal(ipv6: bytes) ? .internalAddress : .publicAddress
            return
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered.hasSuffix(".localhost") {
            self = .internalAddress
            return
        }
        // The WHATWG URL rule: a host whose last label is a number is an IPv4 address.
        let lastLabel = lowered.split(separator: ".", omittingEmptySubsequences: false).last ?? ""
        let looksNumeric =
            lastLabel.isEmpty
            || lastLabel.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            || (lastLabel.hasPrefix("0x") && lastLabel.dropFirst(2).utf8.allSatisfy(\.isHexDigit))
        guard looksNumeric else {
            self = .name
            return
        }
        guard let address = Self.canonicalIPv4(lowered[...]) else {
            self = .ambiguous
            return
        }
        self = Self.isInternal(ipv4: address) ? .internalAddress : .publicAddress
    }

    /// A dotted quad of four decimal parts, each 0–255 without a leading zero.
    static func canonicalIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                part == "0" || !part.hasPrefix("0"), let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// The 16 bytes of an IPv6 address in RFC 4291 §2.2 text (a trailing
    /// dotted quad allowed); `nil` for anything else, a zone id included.
    static func ipv6(_ text: Substring) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var head: [UInt16] = []
        var tail: [UInt16] = []
        var halves: [Substring] = [text]
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(after: index)
            if text[index] == ":", next < text.endIndex, text[next] == ":" {
                guard halves.count == 1 else { return nil }
                halves = [text[..<index], text[text.index(after: next)...]]
                index = text.index(after: next)
            } else {
                index = next
            }
        }
        let sawGap = halves.count == 2
        func groups(_ part: Substring, allowQuad: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if allowQuad, index == pieces.count - 1, piece.contains(".") {
                    guard let quad = canonicalIPv4(piece) else { return nil }
                    result.append(UInt16(quad[0]) << 8 | UInt16(quad[1]))
                    result.append(UInt16(quad[2]) << 8 | UInt16(quad[3]))
                    continue
                }
                guard (1...4).contains(piece.utf8.count), piece.utf8.allSatisfy(\.isHexDigit), let value = UInt16(piece, radix: 16)
                else { return nil }
                result.append(value)
            }
            return result
        }
        if sawGap {
            guard let first = groups(halves[0], allowQuad: false), let second = groups(halves[1], allowQuad: true) else { return nil }
            head = first
            tail = second
            guard head.count + tail.count <= 7 else { return nil }
        } else {
            guard let all = groups(halves[0], allowQuad: true), all.count == 8 else { return nil }
            head = all
        }
        let words = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// Whether an IPv4 address is in a range a public resource must not send the client to.
    static func isInternal(ipv4 a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): return true // "this network", private, loopback
        case (100, 64...127): return true // shared address space (RFC 6598)
        case (169, 254): return true // link-local
        case (172, 16...31), (192, 168): return true // private
        case (192, 0): return a[2] == 0 // IETF protocol assignments (RFC 6890)
        case (198, 18...19): return true // benchmarking
        case (224...255, _): return true // multicast, reserved, broadcast
        default: return false
        }
    }

    /// Whether an IPv6 address is internal, or carries an internal IPv4 address.
    static func isInternal(ipv6 b: [UInt8]) -> Bool {
        let zeroPrefix = b[0..<10].allSatisfy { $0 == 0 }
        if zeroPrefix, b[10] == 0, b[11] == 0 {
            // ::, ::1, and IPv4-compatible addresses (::a.b.c.d, deprecated).
            return b[12..<15].allSatisfy { $0 == 0 } || isInternal(ipv4: Array(b[12..<16]))
        }
        if zeroPrefix, b[10] == 0xFF, b[11] == 0xFF { return isInternal(ipv4: Array(b[12..<16])) } // IPv4-mapped
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, b[4..<12].allSatisfy({ $0 == 0 }) {
            return isInternal(ipv4: Array(b[12..<16])) // NAT64 (RFC 6052)
        }
        if b[0] == 0x20, b[1] == 0x02 { return isInternal(ipv4: Array(b[2..<6])) } // 6to4
        if b[0] & 0xFE == 0xFC { return true } // unique local fc00::/7
        if b[0] == 0xFE, b[1] & 0x80 == 0x80 { return true } // link-local fe80::/10, site-local fec0::/10
        if b[0] == 0xFF { return true } // multicast
        return false
    }
}

private extension UInt8 {
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
