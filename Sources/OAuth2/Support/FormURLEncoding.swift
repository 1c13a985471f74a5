#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `application/x-www-form-urlencoded` as the WHATWG URL Standard defines it,
/// for token request bodies, Basic credentials (RFC 6749 §2.3.1) and
/// redirect queries.
///
/// The serializer keeps ASCII alphanumerics and `*-._`, writes a space as `+`
/// and percent-encodes every other UTF-8 byte with upper-case hex. The parser
/// is stricter than WHATWG's: a malformed `%` escape or bytes that are not
/// UTF-8 are a ``Failure`` instead of being kept, because a redirect carrying
/// them is not one the provider produced.
package enum FormURLEncoding {
    /// Why a form-encoded text was refused. The reason never quotes the text.
    package struct Failure: Error, Equatable {
        package let reason: String
    }

    /// Serializes name–value pairs, in order: `a=1&b=2`.
    package static func encode(_ pairs: [(String, String)], spaceAsPlus: Bool = true) -> String {
        var output: [UInt8] = []
        for (offset, pair) in pairs.enumerated() {
            if offset > 0 { output.append(UInt8(ascii: "&")) }
            append(pair.0, to: &output, spaceAsPlus: spaceAsPlus)
            output.append(UInt8(ascii: "="))
            append(pair.1, to: &output, spaceAsPlus: spaceAsPlus)
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `url` with `pairs` added to its query (a space as `%20`): after `?`
    /// when it has no query, else after its own, joined with `&`.
    ///
    /// - Parameter existingQuery: `url`'s query as ``URLParts`` read it, `nil` when it has none.
    static func appendingQuery(_ pairs: [(String, String)], to url: String, existingQuery: Substring?) -> String {
        var text = url
        if let existingQuery {
            if !existingQuery.isEmpty && !existingQuery.hasSuffix("&") { text += "&" }
        } else {
            text += "?"
        }
        return text + encode(pairs, spaceAsPlus: false)
    }

    /// Encodes one name or value, a space as `+`.
    static func encodeComponent(_ s: String) -> String {
        encodeComponent(s, spaceAsPlus: true)
    }

    /// Encodes one name or value; with `spaceAsPlus: false` a space becomes `%20`.
    ///
    /// `%20` is for URL queries: every form parser and every RFC 3986 query
    /// parser reads it as a space, while `+` is a space only to form parsers.
    package static func encodeComponent(_ s: String, spaceAsPlus: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(s.utf8.count)
        append(s, to: &output, spaceAsPlus: spaceAsPlus)
        return String(decoding: output, as: UTF8.self)
    }

    /// Parses `a=1&b=2` into pairs, in order, repeated names kept.
    ///
    /// Empty pieces (`a=1&&b=2`) are skipped; a piece without `=` is a name
    /// with an empty value; `+` is a space.
    ///
    /// - Throws: ``Failure`` for a `%` not followed by two hex digits, or
    ///   decoded bytes that are not UTF-8.
    package static func decode(_ text: Substring) throws(Failure) -> [(String, String)] {
        var pairs: [(String, String)] = []
        for piece in text.split(separator: "&", omittingEmptySubsequences: true) {
            if let equals = piece.firstIndex(of: "=") {
                let name = try decodeComponent(piece[..<equals])
                let value = try decodeComponent(piece[piece.index(after: equals)...])
                pairs.append((name, value))
            } else {
                pairs.append((try decodeComponent(piece), ""))
            }
        }
        return pairs
    }

    /// Decodes one name or value: `+` is a space, `%XX` a byte.
    package static func decodeComponent(_ text: Substring) throws(Failure) -> String {
        let utf8 = text.utf8
        guard utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(0x20)
                index = utf8.index(after: index)
            case UInt8(ascii: "%"):
                let first = utf8.index(after: index)
                guard first < utf8.endIndex else { throw Failure(reason: "truncated percent escape") }
                let second = utf8.index(after: first)
                guard second < utf8.endIndex,
                    let high = hexValue(utf8[first]),
                    let low = hexValue(utf8[second])
                else {
                    throw Failure(reason: "malformed percent escape")
                }
                bytes.append(high << 4 | low)
                index = utf8.index(after: second)
            default:
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        guard UTF8Validation.isValid(bytes) else {
            throw Failure(reason: "percent-decoded bytes are not UTF-8")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func append(_ string: String, to output: inout [UInt8], spaceAsPlus: Bool) {
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                output.append(byte)
            case UInt8(ascii: " ") where spaceAsPlus:
                output.append(UInt8(ascii: "+"))
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
