#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When the authorization request goes to the provider's pushed
/// authorization request endpoint (RFC 9126) rather than through the browser:
/// the value of ``OAuth2Configuration/pushedAuthorization``.
///
/// A pushed request keeps the parameters (and a signed request object) off
/// the browser's URL, and the provider authenticates the client before the
/// user sees anything; the browser gets only `client_id` and `request_uri`.
public struct PushedAuthorization: Sendable, Hashable, Codable, CustomStringConvertible {
    enum Mode: String, Sendable, Hashable, Codable {
        case automatic
        case always
        case never
    }

    let mode: Mode

    /// Push when the provider requires it (its metadata's
    /// `require_pushed_authorization_requests`, ``OAuth2Configuration/requiresPushedAuthorizationRequests``);
    /// send the parameters in the browser's URL otherwise. The default.
    public static let automatic = PushedAuthorization(mode: .automatic)
    /// Push every authorization request; needs ``OAuth2Configuration/pushedAuthorizationRequestEndpoint``.
    public static let always = PushedAuthorization(mode: .always)
    /// Never push. Refused when the provider requires pushed requests (RFC 9126 §5).
    public static let never = PushedAuthorization(mode: .never)

    /// `automatic`, `always` or `never`.
    public var description: String { mode.rawValue }

    /// Whether a request is pushed, given whether the provider requires it.
    func pushes(whenRequired required: Bool) -> Bool {
        switch mode {
        case .automatic: return required
        case .always: return true
        case .never: return false
        }
    }
}
