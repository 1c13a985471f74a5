#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension URL {
    /// The URL without its query and fragment, for messages: queries may carry codes or tokens.
    var redactingQuery: String {
        var text = absoluteString
        if let index = text.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            text = String(text[..<index]) + "?…"
        }
        return text
    }
}
