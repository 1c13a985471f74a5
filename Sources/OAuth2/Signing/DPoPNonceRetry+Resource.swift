#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DPoPNonceRetry.Event {
    /// What a resource server's answer says of nonces (RFC 9449 §9): a
    /// refusal is a 401 whose `DPoP` challenge names `use_dpop_nonce`, and the
    /// nonce is its `DPoP-Nonce` header (an empty one is none).
    init(resourceAnswer response: borrowing HTTPTransportResponse) {
        let nonce = response.headers[DPoPFields.nonce].flatMap { $0.isEmpty ? nil : $0 }
        guard response.status.code == 401 else {
            self = .answered(refusesForNonce: false, nonce: nonce)
            return
        }
        let refuses = DPoPChallenge.parse(response.headers[values: .wwwAuthenticate])?.error == DPoPFields.useNonceError
        self = .answered(refusesForNonce: refuses, nonce: nonce)
    }
}
