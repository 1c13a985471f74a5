#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Configuration {
    /// The binding every token this configuration obtains is stamped with.
    public var binding: TokenBinding {
        TokenBinding(tokenEndpoint: tokenEndpoint.absoluteString, clientID: clientID)
    }
}
