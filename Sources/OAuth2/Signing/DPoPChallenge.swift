#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `DPoP` challenge of a resource server's `WWW-Authenticate` (RFC 9449
/// §7.1): why a DPoP-bound token or its proof was refused (`invalid_token`,
/// `invalid_dpop_proof`, `use_dpop_nonce`, `insufficient_scope`), and the
/// algorithms the server accepts for proofs.
///
/// Read with ``BearerChallenge/readSchemes(_:)``: the same fields may carry a
/// `Bearer` challenge beside it, and a field that cannot be parsed to its end
/// counts for both.
package struct DPoPChallenge: Sendable, Equatable {
    /// The `algs` parameter, split at spaces: the JWS algorithms the server
    /// accepts for proofs; empty when it did not say.
    package var algorithms: [JWSAlgorithm]
    /// The `error` parameter, such as `use_dpop_nonce`.
    package var error: String?
    /// The `error_description` parameter.
    package var errorDescription: String?
    /// The `scope` parameter (RFC 6750 §3, which RFC 9449 §7.1 keeps): the
    /// scopes the resource needs.
    package var scope: String?

    package init(algorithms: [JWSAlgorithm] = [], error: String? = nil, errorDescription: String? = nil, scope: String? = nil) {
        self.algorithms = algorithms
        self.error = error
        self.errorDescription = errorDescription
        self.scope = scope
    }

    /// The challenge from its auth-params (names lower-cased).
    init(parameters: [String: String]) {
        let algs = parameters["algs"].map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }) } ?? []
        self.init(
            algorithms: algs.prefix(16).map { JWSAlgorithm(rawValue: String($0.prefix(32))) },
            error: parameters["error"],
            errorDescription: parameters["error_description"],
            scope: parameters["scope"]
        )
    }

    /// The first `DPoP` challenge in the `WWW-Authenticate` field values, or
    /// `nil` when there is none.
    package static func parse(_ headerValues: [String]) -> DPoPChallenge? {
        BearerChallenge.readSchemes(headerValues).dpop
    }
}
