#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension URL {
    /// The URL as messages, logs and descriptions may show it: without
    /// userinfo (it may hold a password) and without query and fragment
    /// (they may carry codes or tokens). `…?` marks a query or fragment left
    /// out when `marksQuery`. `package`: the CLI words its messages the same way.
    package func redactedForMessages(marksQuery: Bool = true) -> String {
        var text = Substring(absoluteString)
        var cut = false
        if let index = text.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            text = text[..<index]
            cut = true
        }
        if let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") {
            let authorityStart = text.index(colon, offsetBy: 3)
            let authorityEnd = text[authorityStart...].firstIndex(of: "/") ?? text.endIndex
            if let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") {
                text = text[..<authorityStart] + text[text.index(after: at)...]
            }
        }
        return String(text) + (cut && marksQuery ? "?…" : "")
    }

    /// ``redactedForMessages(marksQuery:)`` with the query marked.
    var redactingQuery: String { redactedForMessages() }
}
