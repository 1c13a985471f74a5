#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The character sets RFC 6749 (Appendix A) gives the short texts a provider
/// sends, which the framework shows in errors, logs and the CLI's output.
///
/// Text outside them is refused or dropped, never shown raw: an escape
/// sequence in a scope or an `error` would reach a terminal or a log line.
/// (Free text, `error_description`, keeps any printable character and loses
/// control and format characters: ``OAuth2Error``.)
enum ProviderText {
    /// `error` (§A.7): 1*NQSCHAR, that is printable ASCII and space without
    /// `"` and `\`; at most 128 bytes, which no real code comes near.
    static func isErrorCode(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128
            && text.utf8.allSatisfy { byte in
                byte == 0x20 || isNQChar(byte)
            }
    }

    /// A scope token (§3.3, §A.4): 1*NQCHAR, printable ASCII without space,
    /// `"` and `\`; at most 1024 bytes.
    static func isScopeToken(some text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= 1024 && text.utf8.allSatisfy(isNQChar)
    }

    /// The scope tokens of a space-separated `scope`, those outside the
    /// grammar dropped.
    static func scopeTokens(_ text: String) -> [String] {
        text.split(separator: " ").filter { isScopeToken(some: $0) }.map(String.init)
    }

    /// `error_uri` (§A.8) when it is an absolute `http` or `https` URI of
    /// RFC 6749's URI characters (%x21 / %x23-5B / %x5D-7E), at most 2048
    /// bytes; otherwise `nil`: a `javascript:` or `file:` link, or one
    /// carrying escapes, is dropped.
    static func errorURI(_ text: String) -> String? {
        guard text.utf8.count <= 2048, text.utf8.allSatisfy(isNQChar) else { return nil }
        let lowered = text.lowercased()
        guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"),
            let url = URL(string: text), let host = url.host, !host.isEmpty
        else { return nil }
        return text
    }

    /// NQCHAR: %x21 / %x23-5B / %x5D-7E.
    private static func isNQChar(_ byte: UInt8) -> Bool {
        byte == 0x21 || (0x23...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)
    }
}
