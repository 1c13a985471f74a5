#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a client binds the tokens of its new grants to a DPoP key (RFC 9449):
/// the value of ``OAuth2Configuration/dpop``.
///
/// With it set, every grant the client starts gets a new ``DPoPKey``, its
/// token requests and every request that presents its tokens carry proofs,
/// and its tokens are stored with the key. A stored token that is already
/// bound is always presented with proofs, whatever the configuration says.
public struct DPoPSettings: Sendable, Hashable, Codable {
    /// The algorithm of new keys, when the provider's
    /// `dpop_signing_alg_values_supported` allows it; otherwise the first of
    /// ``DPoPKey/supportedAlgorithms`` it allows. `nil`: ES256 first.
    public var algorithm: JWSAlgorithm?
    /// Whether a provider that answers a DPoP token request with a bearer
    /// token (`token_type` `Bearer`) is accepted, the token then used as a
    /// bearer token. Off by default: such an answer fails with a typed
    /// error, since the app asked for tokens a thief cannot use.
    public var allowsBearerDowngrade: Bool

    /// DPoP settings; the defaults bind every new grant with an ES256 key and refuse a bearer answer.
    public init(algorithm: JWSAlgorithm? = nil, allowsBearerDowngrade: Bool = false) {
        self.algorithm = algorithm
        self.allowsBearerDowngrade = allowsBearerDowngrade
    }
}

extension OAuth2Configuration {
    /// The key of a grant that starts now: a new one when ``dpop`` is set,
    /// for the settings' algorithm when the provider's metadata allows it,
    /// else the first of ``DPoPKey/supportedAlgorithms`` it does; `nil` for
    /// a bearer configuration.
    ///
    /// - Throws: `invalid_configuration` when the provider lists no
    ///   algorithm this library signs with.
    package func newDPoPKey() throws(OAuth2Error) -> DPoPKey? {
        guard let dpop else { return nil }
        let listed = dpopSigningAlgValuesSupported
        return try DPoPKey.generate(
            algorithm: try DPoPKey.algorithm(preferred: dpop.algorithm, providerAlgorithms: listed.isEmpty ? nil : listed))
    }
}
