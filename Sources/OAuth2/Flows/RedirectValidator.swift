#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Checks the redirect that ends an authorization request (RFC 6749 §4.1.2,
/// RFC 9207, RFC 9700 §4.7) and extracts the authorization code.
///
/// The rules run in the order of DESIGN.md §5, so the first rule a redirect
/// breaks names the error. Whether the state was already used is the
/// client's business, not this validator's.
package enum RedirectValidator {
    /// The longest redirect accepted, in UTF-8 bytes.
    static let maxLength = 8192

    /// Fragment parameters that mean a front-channel (implicit or hybrid) response.
    private static let frontChannelParameters: Set<String> = ["access_token", "id_token", "token_type", "code"]

    /// Validates a redirect URL (as pasted or as requested of a loopback
    /// listener) against the pending authorization and returns the code.
    ///
    /// Surrounding whitespace and newlines of a pasted URL are ignored.
    ///
    /// - Throws: in this order, `url_too_long`, `invalid_redirect_url`,
    ///   `redirect_uri_mismatch`, `unexpected_response` (tokens in the
    ///   fragment), `invalid_parameter`, `duplicate_parameter`,
    ///   `state_mismatch`, `issuer_mismatch`, `missing_issuer`, the provider's
    ///   own `error`, `unexpected_response` (`access_token` in the query),
    ///   `missing_code`. No message contains the code or the state.
    ///
    /// `issuerRule` says which `iss` values name the pending request's
    /// expected issuer (a tenant's, for a template).
    package static func validate(
        _ redirect: String, pending: PendingAuthorization, issuerRule: IssuerRule = .exact
    ) throws(OAuth2Error) -> Secret {
        guard redirect.utf8.count <= maxLength else {
            throw OAuth2Error(code: .urlTooLong, message: "the redirect URL is longer than \(maxLength) bytes")
        }
        let trimmed = redirect.trimmingSurroundingWhitespace
        guard let parts = URLParts(trimmed), !parts.isHTTP || !(parts.host ?? "").isEmpty else {
            throw OAuth2Error(code: .invalidRedirectURL, message: "the redirect is not an absolute URL")
        }
        try checkMatches(parts, pending.redirectURI)
        if let fragment = parts.fragment {
            try checkFragment(fragment)
        }

        let parameters: [(String, String)]
        do throws(FormURLEncoding.Failure) {
            parameters = try FormURLEncoding.decode(parts.query ?? "")
        } catch {
            throw OAuth2Error(code: .invalidParameter, message: "the redirect's query is malformed: \(error.reason)")
        }
        let values = try checkedParameters(parameters, of: "redirect")
        return try code(from: values, pending: pending, of: "redirect", issuerRule: issuerRule)
    }

    /// The parameters of a redirect or a posted response, each once.
    ///
    /// - Parameter source: what carried them, for messages (`redirect`, `posted response`).
    /// - Throws: `invalid_parameter` for a name or value with control
    ///   characters, or a `code` or `state` outside VSCHAR; `duplicate_parameter`.
    static func checkedParameters(_ parameters: [(String, String)], of source: String) throws(OAuth2Error) -> [String: String] {
        var values: [String: String] = [:]
        for (name, value) in parameters {
            guard !containsControlCharacter(name), !containsControlCharacter(value) || name == "user" else {
                throw OAuth2Error(code: .invalidParameter, message: "a \(source) parameter contains control characters")
            }
            guard name != "code" && name != "state" || isVSCHAR(value) else {
                throw OAuth2Error(
                    code: .invalidParameter,
                    message: "the \(source)'s \(name) has characters outside RFC 6749 Appendix A's VSCHAR (%x20-7E)"
                )
            }
            guard values.updateValue(value, forKey: name) == nil else {
                throw OAuth2Error(code: .duplicateParameter, message: "the \(source) repeats the parameter \(OAuth2Error.sanitize(name))")
            }
        }
        return values
    }

    /// Checks the parameters of a redirect or a posted response against the
    /// pending authorization, in the order of DESIGN.md §5, and returns the code.
    ///
    /// - Throws: `state_mismatch`, `issuer_mismatch`, `missing_issuer`, the
    ///   provider's own `error`, `unexpected_response` (an `access_token`),
    ///   `missing_code`.
    /// `issuerRule` says which `iss` values name the pending request's expected issuer.
    static func code(
        from values: [String: String], pending: PendingAuthorization, of source: String, issuerRule: IssuerRule = .exact
    ) throws(OAuth2Error) -> Secret {
        guard let state = nonEmpty(values["state"]), Secret.constantTimeEquals(state, pending.state) else {
            throw OAuth2Error(
                code: .stateMismatch,
                message: "the \(source)'s state is missing or does not match the authorization request"
            )
        }
        if let issuer = nonEmpty(values["iss"]) {
            if let expected = pending.expectedIssuer, !issuerRule.acceptsRedirectIssuer(issuer, configured: expected) {
                throw OAuth2Error(
                    code: .issuerMismatch,
                    message: "the \(source)'s iss \(OAuth2Error.sanitize(issuer)) is not the expected issuer \(expected)"
                )
            }
        } else if pending.requiresIssuer {
            throw OAuth2Error(code: .missingIssuer, message: "the \(source) has no iss parameter, which the provider promised (RFC 9207)")
        }
        if let error = nonEmpty(values["error"]) {
            guard ProviderText.isErrorCode(error) else {
                throw OAuth2Error(
                    code: .invalidRedirectURL,
                    message: "the \(source)'s error parameter has characters RFC 6749 does not allow in an error code"
                )
            }
            throw OAuth2Error.provider(error: error, description: values["error_description"], uri: values["error_uri"])
        }
        if values["access_token"] != nil {
            throw OAuth2Error(code: .unexpectedResponse, message: "the \(source) carries an access token (front channel)")
        }
        guard let code = nonEmpty(values["code"]) else {
            throw OAuth2Error(code: .missingCode, message: "the \(source) carries neither a code nor an error")
        }
        return Secret(code)
    }

    /// Requires the scheme, host (case-insensitively), port (defaults
    /// normalised) and path of the redirect URI that was sent.
    private static func checkMatches(_ parts: URLParts, _ redirectURI: URL) throws(OAuth2Error) {
        guard let expected = URLParts(redirectURI.absoluteString[...]) else {
            throw OAuth2Error(code: .redirectURIMismatch, message: "the redirect URI sent is not an absolute URI")
        }
        var differences: [String] = []
        if parts.scheme.lowercased() != expected.scheme.lowercased() { differences.append("scheme") }
        if parts.userinfo != expected.userinfo { differences.append("userinfo") }
        if parts.host?.lowercased() != expected.host?.lowercased() { differences.append("host") }
        if parts.effectivePort != expected.effectivePort || (parts.port != nil && parts.effectivePort == nil) {
            differences.append("port")
        }
        if parts.normalizedPath != expected.normalizedPath { differences.append("path") }
        guard differences.isEmpty else {
            throw OAuth2Error(
                code: .redirectURIMismatch,
                message:
                    "the redirect's \(differences.joined(separator: ", ")) differ from the redirect URI sent (\(redirectURI.redactingQuery))"
            )
        }
    }

    /// Refuses a fragment carrying a token or code: the provider answered in
    /// the front channel, where the browser history and referrers see it.
    private static func checkFragment(_ fragment: Substring) throws(OAuth2Error) {
        for piece in fragment.split(separator: "&") {
            let rawName = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? piece
            let name = (try? FormURLEncoding.decodeComponent(rawName)) ?? String(rawName)
            if frontChannelParameters.contains(name) {
                throw OAuth2Error(
                    code: .unexpectedResponse,
                    message: "the redirect carries \(name) in its fragment (a front-channel response); only the code flow is supported"
                )
            }
        }
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    /// Whether every character is a VSCHAR (%x20-7E), all that RFC 6749 Appendix A allows in `code` and `state`.
    static func isVSCHAR(_ text: String) -> Bool {
        text.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// Whether the text has a C0 or C1 control character or DEL, which no RFC 6749 parameter allows.
    static func containsControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: isControl)
    }

    /// Whether the scalar is a C0 or C1 control character or DEL.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
