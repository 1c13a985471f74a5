#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The header fields and the nonce error of RFC 9449 (DPoP), named once:
/// here, below everything that sends or follows a request, since a redirect
/// must not carry a proof along.
enum DPoPFields {
    /// `DPoP`: the proof of one request (its method and URL).
    static let proof = HTTPField.Name("DPoP")!
    /// `DPoP-Nonce`: a nonce the server wants in the next proof.
    static let nonce = HTTPField.Name("DPoP-Nonce")!
    /// `use_dpop_nonce`: the error of a server that wants a proof with its
    /// nonce (RFC 9449 §8, §9), from a token endpoint's body or a resource's challenge.
    static let useNonceError = "use_dpop_nonce"
}
