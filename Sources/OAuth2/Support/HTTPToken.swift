#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// RFC 9110's `token` grammar: header field names, methods, auth schemes and
/// challenge parameter names. `package`: the CLI checks `--header` and
/// `--method` with the same table.
package enum HTTPToken {
    /// Whether `byte` is a `tchar` (RFC 9110 §5.6.2).
    package static func isCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `text` is a non-empty `token`: the only characters a method or header name may have.
    package static func isToken(_ text: String) -> Bool {
        guard !text.isEmpty else { return false }
        var text = text
        // Contiguous UTF-8: the transport asks for every header of every request.
        return text.withUTF8 { $0.allSatisfy(isCharacter) }
    }
}
