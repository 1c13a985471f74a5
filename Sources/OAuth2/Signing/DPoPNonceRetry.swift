#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether a request a server refused for want of a DPoP nonce
/// (`use_dpop_nonce`, RFC 9449 §8 and §9) is sent again: once, with the nonce
/// the server's refusal carried; a second refusal fails with `dpop_nonce_loop`.
///
/// A pure value (DESIGN.md §9, "Policies are values"): the owner sends,
/// reports each answer with ``event(_:)``, and does what it says. One value
/// per request, whatever is retried inside it, so a retried refresh is still
/// one refresh for the account's lock and the refresh coordination, and an
/// authorization code is sent at most twice (a server answers `use_dpop_nonce`
/// before it spends the code, RFC 9449 §8).
///
/// States: `first` (nothing retried) → `retried` on the first refusal that
/// names a nonce; a refusal in `retried` is the loop. A refusal without a
/// `DPoP-Nonce` header is not retried: the same proof would be refused again,
/// and the server's own error is the better report.
package struct DPoPNonceRetry: Sendable {
    /// What the server answered.
    package enum Event: Sendable {
        /// `refusesForNonce`: the answer is `use_dpop_nonce`; `nonce`: its
        /// `DPoP-Nonce` header, when it has one.
        case answered(refusesForNonce: Bool, nonce: String?)
    }

    /// What the owner does next.
    package enum Action: Sendable, Equatable {
        /// The answer stands: read it.
        case accept
        /// Send the request again, with a new proof carrying `nonce`.
        case retry(nonce: String)
        /// Give up with this error (`dpop_nonce_loop`).
        case fail(OAuth2Error)
    }

    private enum State: Sendable {
        case first
        case retried
    }

    private var state = State.first

    package init() {}

    /// Decides what an answer means.
    package mutating func event(_ event: Event) -> Action {
        switch event {
        case .answered(refusesForNonce: false, _):
            return .accept
        case .answered(refusesForNonce: true, let nonce):
            switch state {
            case .first:
                guard let nonce else { return .accept }
                state = .retried
                return .retry(nonce: nonce)
            case .retried:
                return .fail(
                    OAuth2Error(
                        code: .dpopNonceLoop,
                        message: "the server asked for a DPoP nonce again after the retry with the nonce it gave (use_dpop_nonce twice)"
                    ))
            }
        }
    }
}
