#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The authorization response a provider posts to the redirect URI instead of
/// putting it in the redirect's query (`response_mode=form_post`, OAuth 2.0
/// Form Post Response Mode): the `application/x-www-form-urlencoded` body of
/// that POST, as the app's web framework received it.
///
/// Sign in with Apple answers this way whenever the name or email is asked
/// for. Finish the sign-in with
/// ``OAuth2Grant/authorizationCode(formPost:pending:)``: the same checks as a
/// redirect's (`state`, `iss` when sent or required, the provider's `error`,
/// the code, a state used once), without the URL's (the POST came to the
/// route that serves the redirect URI). An `id_token` in the body is not
/// used: the one that counts comes from the token endpoint and is verified.
///
/// Its `description` and mirror name the parameters, never their values.
public struct FormPostResponse: Sendable, CustomStringConvertible, CustomReflectable {
    /// The longest body accepted, in bytes: room for a code, a state, an ID
    /// token and a `user`, and no more.
    public static let maxBodySize = 16 * 1024

    /// The parameters, each once.
    let values: [String: String]

    /// The `user` the provider posts on a user's first sign-in only (Sign in
    /// with Apple: the name the user chose to share, and the email), or `nil`.
    ///
    /// Untrusted: nothing ties it to the sign-in until the grant with this
    /// response has succeeded, and even then the provider does not sign it.
    /// Use it only to prefill a profile, never to identify the user (that is
    /// the verified ID token's `iss` and `sub`). Save it at once: it is never
    /// sent again.
    public let user: UnverifiedUser?

    /// Parses a posted body.
    ///
    /// - Throws: ``OAuth2Error``: `response_too_large` over ``maxBodySize``;
    ///   `invalid_parameter` for a malformed body or a value with control
    ///   characters (a `code` or `state` outside RFC 6749's VSCHAR);
    ///   `duplicate_parameter` for a repeated parameter. No message contains a value.
    public init(body: String) throws(OAuth2Error) {
        guard body.utf8.count <= Self.maxBodySize else {
            throw OAuth2Error(
                code: .responseTooLarge, message: "the posted authorization response is longer than \(Self.maxBodySize) bytes")
        }
        let parameters: [(String, String)]
        do throws(FormURLEncoding.Failure) {
            parameters = try FormURLEncoding.decode(body.trimmingSurroundingWhitespace[...])
        } catch {
            throw OAuth2Error(code: .invalidParameter, message: "the posted authorization response is malformed: \(error.reason)")
        }
        let values = try RedirectValidator.checkedParameters(parameters, of: "posted response")
        self.values = values
        user = values["user"].flatMap(UnverifiedUser.init(json:))
    }

    /// Parses a posted body given as bytes; see ``init(body:)-(String)``.
    ///
    /// - Throws: as ``init(body:)-(String)``, and `invalid_parameter` when the bytes are not UTF-8.
    public init(body: Data) throws(OAuth2Error) {
        guard body.count <= Self.maxBodySize else {
            throw OAuth2Error(
                code: .responseTooLarge, message: "the posted authorization response is longer than \(Self.maxBodySize) bytes")
        }
        guard let text = String(data: body, encoding: .utf8) else {
            throw OAuth2Error(code: .invalidParameter, message: "the posted authorization response is not UTF-8")
        }
        try self.init(body: text)
    }

    /// The `state` posted, when there is one: what an app looks its pending
    /// authorization up by (in the session of the browser that posted). It
    /// proves nothing by itself; the grant compares it with the pending one.
    public var state: String? { values["state"] }

    /// The names of the parameters posted, sorted; never a value.
    public var parameterNames: [String] { values.keys.sorted() }

    /// The parameter names only.
    public var description: String { "FormPostResponse(\(parameterNames.joined(separator: ", ")))" }

    /// The parameter names only: the values hold the code and the state.
    public var customMirror: Mirror {
        Mirror(self, children: ["parameters": parameterNames], displayStyle: .struct)
    }

    /// Checks the response against the pending authorization and returns its code.
    ///
    /// - Throws: as ``RedirectValidator/code(from:pending:of:issuerRule:)``.
    func code(for pending: PendingAuthorization, issuerRule: IssuerRule = .exact) throws(OAuth2Error) -> Secret {
        try RedirectValidator.code(from: values, pending: pending, of: "posted response", issuerRule: issuerRule)
    }
}
