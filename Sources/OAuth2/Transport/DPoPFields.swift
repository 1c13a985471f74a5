#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The header fields of RFC 9449 (DPoP): named here, below everything that
/// sends or follows a request, since a redirect must not carry a proof along.
enum DPoPFields {
    /// `DPoP`: the proof of one request (its method and URL).
    static let proof = HTTPField.Name("DPoP")!
    /// `DPoP-Nonce`: a nonce the server wants in the next proof.
    static let nonce = HTTPField.Name("DPoP-Nonce")!
}
