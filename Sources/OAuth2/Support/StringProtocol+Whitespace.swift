#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension StringProtocol {
    /// The text without the whitespace and line breaks around it: how a
    /// pasted redirect URL or a key from the environment is read.
    package var trimmingSurroundingWhitespace: SubSequence {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
            let last = lastIndex(where: { !$0.isWhitespace })
        else { return self[endIndex...] }
        return self[first...last]
    }

    /// The text without leading and trailing spaces and tabs (HTTP's OWS).
    package var trimmingOWS: SubSequence {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isOWS($0) }), let last = lastIndex(where: { !isOWS($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
