#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `Bearer` challenge of a resource server's `WWW-Authenticate` (RFC 6750 §3),
/// which says why a token was refused: `invalid_token` (refresh and retry),
/// `insufficient_scope`, `invalid_request`, `insufficient_user_authentication`
/// (RFC 9470), and where to learn more (RFC 9728's `resource_metadata`).
///
/// Every auth-param is kept (``parameters``, names lowercased, first value of
/// a repeated name), not only the three RFC 6750 names.
public struct BearerChallenge: Sendable, Equatable {
    /// Every auth-param of the challenge, by lowercased name; a repeated name
    /// keeps its first value. Values came from the resource server: untrusted text.
    public var parameters: [String: String]

    /// Creates a challenge from its auth-params (names are lowercased).
    public init(parameters: [String: String] = [:]) {
        var lowered: [String: String] = [:]
        for (name, value) in parameters where lowered[name.lowercased()] == nil {
            lowered[name.lowercased()] = value
        }
        self.parameters = lowered
    }

    /// Creates a challenge from the three RFC 6750 parameters.
    package init(error: String?, errorDescription: String?, scope: String?) {
        var parameters: [String: String] = [:]
        parameters["error"] = error
        parameters["error_description"] = errorDescription
        parameters["scope"] = scope
        self.parameters = parameters
    }

    /// The `error` parameter, such as `invalid_token`.
    public var error: String? { parameters["error"] }
    /// The `error_description` parameter.
    public var errorDescription: String? { parameters["error_description"] }
    /// The `scope` parameter: the scopes the resource needs, space-separated.
    public var scope: String? { parameters["scope"] }
    /// The `realm` parameter.
    public var realm: String? { parameters["realm"] }
    /// RFC 9728 §5.1's `resource_metadata`: the URL of the protected
    /// resource's metadata document, as the resource sent it (unchecked).
    public var resourceMetadata: String? { parameters["resource_metadata"] }
    /// RFC 9470 §3's `acr_values`: the authentication context classes the
    /// resource asks for, space-separated.
    public var acrValues: String? { parameters["acr_values"] }
    /// RFC 9470 §3's `max_age`: the longest time since the user authenticated
    /// that the resource accepts, when it is a non-negative whole number of seconds.
    public var maxAge: Duration? {
        guard let text = parameters["max_age"], !text.isEmpty, text.count <= 10,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let seconds = Int64(text)
        else { return nil }
        return .seconds(seconds)
    }

    /// The first `Bearer` challenge in the `WWW-Authenticate` field values, or
    /// `nil` when there is none.
    ///
    /// Follows RFC 9110 §11.6.1 (formerly RFC 7235): a field may hold several
    /// challenges separated by commas, and several fields may be sent; the
    /// scheme is case-insensitive, as are parameter names; values are tokens
    /// or quoted strings with `\` escapes. Parsing stops at the first
    /// malformed part, keeping what was read before it. A repeated parameter
    /// keeps its first value.
    public static func parse(_ headerValues: [String]) -> BearerChallenge? {
        read(headerValues).bearer
    }

    /// The first `Bearer` challenge, and whether any field value, before or
    /// after it, could not be parsed to its end (an unterminated quoted
    /// string, a stray `=`): a 401 whose challenges cannot all be read counts
    /// as one without an error code, whatever was read before the damage
    /// (`error="invalid_token, error_description="` is not an error code).
    package static func read(_ headerValues: [String]) -> (bearer: BearerChallenge?, malformed: Bool) {
        let read = readSchemes(headerValues)
        return (read.bearer, read.malformed)
    }

    /// The first `Bearer` and the first `DPoP` challenge (RFC 9449 §7.1: a
    /// resource server that accepts both sends both), and whether any field
    /// value could not be parsed to its end, as ``read(_:)`` says.
    package static func readSchemes(_ headerValues: [String]) -> (bearer: BearerChallenge?, dpop: DPoPChallenge?, malformed: Bool) {
        var malformed = false
        var bearer: BearerChallenge?
        var dpop: DPoPChallenge?
        for value in headerValues {
            var parser = ChallengeParser(bytes: Array(value.utf8))
            let challenges = parser.parseAll()
            malformed = malformed || parser.malformed
            if bearer == nil, let challenge = challenges.first(where: { $0.scheme.lowercased() == "bearer" }) {
                bearer = BearerChallenge(parameters: challenge.parameters)
            }
            if dpop == nil, let challenge = challenges.first(where: { $0.scheme.lowercased() == "dpop" }) {
                dpop = DPoPChallenge(parameters: challenge.parameters)
            }
        }
        return (bearer, dpop, malformed)
    }
}

extension BearerChallenge {
    /// One challenge: a scheme and its auth-params (a token68 is skipped).
    struct Challenge {
        var scheme: String
        var parameters: [String: String] = [:]
    }

    /// Reads the challenges of one `WWW-Authenticate` field value; shared
    /// with ``DPoPChallenge``, since one field may hold both schemes.
    struct ChallengeParser {
        let bytes: [UInt8]
        var index = 0
        var malformed = false

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        mutating func parseAll() -> [Challenge] {
            var challenges: [Challenge] = []
            while !malformed {
                skipListSeparators()
                guard index < bytes.count else { break }
                guard let scheme = readToken() else {
                    malformed = true
                    break
                }
                var challenge = Challenge(scheme: scheme)
                let hadSpace = skipSpaces()
                if hadSpace, index < bytes.count, bytes[index] != UInt8(ascii: ",") {
                    if isAuthParamAhead() {
                        // Ends at the end, at the next challenge, or where the text is malformed.
                        parseParameters(into: &challenge)
                        challenges.append(challenge)
                        continue
                    } else if !skipToken68() {
                        malformed = true
                    }
                }
                challenges.append(challenge)
                if !malformed {
                    skipSpaces()
                    if index < bytes.count && bytes[index] != UInt8(ascii: ",") { malformed = true }
                }
            }
            return challenges
        }

        /// Reads `name = value` pairs up to the end or to the start of the next challenge.
        private mutating func parseParameters(into challenge: inout Challenge) {
            while true {
                guard let name = readToken() else {
                    malformed = true
                    return
                }
                skipSpaces()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                    malformed = true
                    return
                }
                index += 1
                skipSpaces()
                let value: String?
                if index < bytes.count && bytes[index] == UInt8(ascii: "\"") {
                    value = readQuotedString()
                } else {
                    value = readToken()
                }
                guard let value else {
                    malformed = true
                    return
                }
                let key = name.lowercased()
                if challenge.parameters[key] == nil {
                    challenge.parameters[key] = value
                }
                skipSpaces()
                guard index < bytes.count else { return }
                guard bytes[index] == UInt8(ascii: ",") else {
                    malformed = true
                    return
                }
                skipListSeparators()
                guard index < bytes.count, isAuthParamAhead() else { return }
            }
        }

        /// Whether `token BWS "=" BWS (token / quoted-string)` starts here
        /// (an `=` followed by another `=`, a comma or the end is token68 padding).
        private mutating func isAuthParamAhead() -> Bool {
            let start = index
            defer { index = start }
            guard readToken() != nil else { return false }
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return false }
            index += 1
            skipSpaces()
            guard index < bytes.count else { return false }
            return bytes[index] == UInt8(ascii: "\"") || HTTPToken.isCharacter(bytes[index]) && bytes[index] != UInt8(ascii: "=")
        }

        /// Skips `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
        private mutating func skipToken68() -> Bool {
            let start = index
            while index < bytes.count, HTTPToken.isToken68Character(bytes[index]) { index += 1 }
            guard index > start else { return false }
            while index < bytes.count, bytes[index] == UInt8(ascii: "=") { index += 1 }
            return true
        }

        private mutating func readToken() -> String? {
            let start = index
            while index < bytes.count, HTTPToken.isCharacter(bytes[index]) { index += 1 }
            guard index > start else { return nil }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// Reads a quoted-string, undoing `\` escapes; `nil` when unterminated or holding a control character.
        private mutating func readQuotedString() -> String? {
            index += 1
            var value: [UInt8] = []
            while index < bytes.count {
                var byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: value, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    byte = bytes[index]
                    index += 1
                default:
                    break
                }
                guard byte >= 0x20 || byte == 0x09, byte != 0x7F else { return nil }
                value.append(byte)
            }
            return nil
        }

        @discardableResult
        private mutating func skipSpaces() -> Bool {
            let start = index
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
            return index > start
        }

        /// Skips whitespace and the commas of empty list elements.
        private mutating func skipListSeparators() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == UInt8(ascii: ",") {
                index += 1
            }
        }
    }
}
