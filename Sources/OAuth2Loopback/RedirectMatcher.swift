import OAuth2

/// Decides whether a request target is the redirect being waited for: the
/// exact path, and exactly one `state` equal to the expected one.
struct RedirectMatcher: Sendable {
    /// The redirect URI's path, percent-encoded as sent.
    let path: String
    /// The `state` sent in the authorization request.
    let state: String

    /// Whether the target's path (before `?` or `#`) is the redirect path.
    func matchesPath(_ target: ArraySlice<UInt8>) -> Bool {
        let end = target.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? target.endIndex
        return target[..<end].elementsEqual(path.utf8)
    }

    /// Whether the target's query carries exactly one non-empty `state`
    /// equal to the expected one (compared in constant time).
    ///
    /// - Parameter truncated: the target was cut at the size cap: its last
    ///   parameter may be incomplete and is ignored.
    func carriesState(_ target: ArraySlice<UInt8>, truncated: Bool = false) -> Bool {
        guard let questionMark = target.firstIndex(of: UInt8(ascii: "?")) else { return false }
        let afterQuery = target[(questionMark + 1)...]
        var query = afterQuery[..<(afterQuery.firstIndex(of: UInt8(ascii: "#")) ?? afterQuery.endIndex)]
        if truncated {
            query = query[..<(query.lastIndex(of: UInt8(ascii: "&")) ?? query.startIndex)]
        }
        var found: [UInt8]?
        for parameter in query.split(separator: UInt8(ascii: "&")) {
            let equals = parameter.firstIndex(of: UInt8(ascii: "=")) ?? parameter.endIndex
            guard Self.decode(parameter[..<equals]).map({ $0.elementsEqual("state".utf8) }) == true else { continue }
            guard found == nil else { return false }
            let value = equals == parameter.endIndex ? [] : parameter[(equals + 1)...]
            guard let decoded = Self.decode(value[...]), !decoded.isEmpty else { return false }
            found = decoded
        }
        guard let found else { return false }
        return Secret(String(decoding: found, as: UTF8.self)).constantTimeEquals(Secret(state))
    }

    /// Form-decodes one name or value (`+` is a space); `nil` on a bad `%` escape.
    static func decode(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                    let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return nil }
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
