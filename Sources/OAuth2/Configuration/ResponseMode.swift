/// How the provider returns the authorization response (OAuth 2.0 Multiple
/// Response Type Encoding Practices, `response_mode`).
///
/// ``OAuth2Configuration/responseMode`` sends it with the authorization
/// request. With ``formPost`` the user's browser POSTs the response to the
/// redirect URI; finish it with ``OAuth2Grant/authorizationCode(formPost:pending:)``.
public struct ResponseMode: Sendable, Hashable, CustomStringConvertible {
    /// The `response_mode` value sent.
    public let rawValue: String

    /// In the redirect URI's query: the default of the code flow, which needs no parameter.
    public static let query = ResponseMode(rawValue: "query")
    /// Posted as a form to the redirect URI (OAuth 2.0 Form Post Response
    /// Mode): what Sign in with Apple requires when the name or email is asked for.
    public static let formPost = ResponseMode(rawValue: "form_post")

    /// A response mode of that name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The `response_mode` value.
    public var description: String { rawValue }
}
