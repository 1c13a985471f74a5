#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What a protected resource asked for when it refused a token: more scope
/// (RFC 6750 §3.1 `insufficient_scope` with `scope`), or a stronger or
/// fresher authentication (RFC 9470 `insufficient_user_authentication` with
/// `acr_values` or `max_age`). Carried by ``OAuth2Error/stepUp``.
///
/// ``scopes`` is already the union of what the token had and what the
/// resource asked for: authorize with it as it is. Every value came from
/// the resource server; none is a secret.
public struct StepUpRequest: Sendable, Hashable {
    /// The resource (RFC 8707 `resource`) the new token is for.
    public var resource: URL?
    /// The scopes to ask for: what the refused token had, and what the resource asked for.
    public var scopes: [String]
    /// The authentication context classes the resource asked for, in its order.
    public var acrValues: [String]
    /// The longest time since the user authenticated that the resource accepts.
    public var maxAge: Duration?

    /// Creates a step-up request.
    public init(resource: URL? = nil, scopes: [String] = [], acrValues: [String] = [], maxAge: Duration? = nil) {
        self.resource = resource
        self.scopes = scopes
        self.acrValues = acrValues
        self.maxAge = maxAge
    }
}
