#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
