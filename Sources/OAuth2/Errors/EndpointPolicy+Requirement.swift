#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The rule itself is Support's (EndpointPolicy.isSecure); the error it becomes
// is here, beside the other failures turned into OAuth2Error, so that every
// folder that sends to a URL (Configuration, Signing) can refuse one without
// depending on another that does.
extension EndpointPolicy {
    /// Throws `insecure_endpoint` unless the URL may carry secrets.
    static func requireSecure(_ url: URL, role: String) throws(OAuth2Error) {
        guard isSecure(url) else {
            throw OAuth2Error(
                code: .insecureEndpoint,
                message: "the \(role) must be https (http is allowed only for loopback hosts): \(url.redactingQuery)"
            )
        }
    }
}
