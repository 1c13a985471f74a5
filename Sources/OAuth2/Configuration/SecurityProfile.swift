#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A security profile whose client duties a configuration takes on: the
/// value of ``OAuth2Configuration/securityProfile``.
///
/// Setting one turns on what the profile asks of a client and the
/// configuration can decide by itself; ``OAuth2Configuration/validate()``
/// then refuses, with a message naming the rule, whatever still breaks it.
public struct SecurityProfile: Sendable, Hashable, Codable, CustomStringConvertible {
    enum Profile: String, Sendable, Hashable, Codable {
        case fapi2 = "fapi2_security_profile"
    }

    let profile: Profile

    /// The FAPI 2.0 Security Profile (OpenID Foundation, final, February 2025).
    ///
    /// Setting it pushes every authorization request (RFC 9126), binds new
    /// grants' tokens to an ES256 DPoP key (RFC 9449) unless the client
    /// authenticates with mutual TLS, and requires `iss` in redirects
    /// (RFC 9207). PKCE S256 is always on in this library. The configuration
    /// is refused when the client authenticates other than with
    /// `private_key_jwt` or mutual TLS, when a key's algorithm is not PS256,
    /// ES256 or EdDSA, when ID tokens signed with another algorithm would be
    /// accepted (setting the profile narrows ``OpenIDSettings/signingAlgorithms``
    /// to the permitted ones when the provider uses any), when the password
    /// grant is allowed, or when a duty above was turned off again.
    public static let fapi2 = SecurityProfile(profile: .fapi2)

    /// The profile's name.
    public var description: String {
        switch profile {
        case .fapi2: return "FAPI 2.0 Security Profile"
        }
    }

    /// The JWS algorithms FAPI 2.0 permits (§5.4: PS256, ES256, EdDSA with Ed25519).
    static let fapi2Algorithms: Set<JWSAlgorithm> = [.ps256, .es256, .edDSA]
}

extension OAuth2Configuration {
    /// Whether the client authenticates with mutual TLS (RFC 8705 §2):
    /// `tls_client_auth` or `self_signed_tls_client_auth`.
    var authenticatesWithMutualTLS: Bool {
        ["tls_client_auth", "self_signed_tls_client_auth"].contains(clientAuthentication.description)
    }

    /// Turns on the duties of the profile just set that the configuration can take on by itself.
    mutating func takeOnDuties(of profile: SecurityProfile) {
        switch profile.profile {
        case .fapi2:
            if pushedAuthorization == .automatic { pushedAuthorization = .always }
            if dpop == nil && !authenticatesWithMutualTLS { dpop = DPoPSettings(algorithm: .es256) }
            if dpop != nil && dpop?.algorithm == nil { dpop?.algorithm = .es256 }
            if issuer != nil { requiresIssuerInRedirect = true }
            // ID tokens too are held to §5.4's algorithms; a provider that
            // signs with none of them is refused by validate(), naming the rule.
            if var settings = openID {
                let permitted = settings.signingAlgorithms.intersection(SecurityProfile.fapi2Algorithms)
                if !permitted.isEmpty {
                    settings.signingAlgorithms = permitted
                    openID = settings
                }
            }
        }
    }

    /// Refuses a configuration that breaks its security profile, naming the rule.
    ///
    /// - Throws: `invalid_configuration`.
    func validateSecurityProfile() throws(OAuth2Error) {
        guard let securityProfile else { return }
        switch securityProfile.profile {
        case .fapi2: try validateFAPI2()
        }
    }

    private func validateFAPI2() throws(OAuth2Error) {
        func broken(_ rule: String) -> OAuth2Error {
            OAuth2Error(code: .invalidConfiguration, message: "FAPI 2.0 Security Profile: \(rule)")
        }
        let name = clientAuthentication.description
        guard name == "private_key_jwt" || authenticatesWithMutualTLS else {
            throw broken(
                "clients shall authenticate with private_key_jwt or mutual TLS (§5.3.2.1, RFC 7523, RFC 8705); clientAuthentication is \(name)"
            )
        }
        guard dpop != nil || authenticatesWithMutualTLS else {
            throw broken("access tokens shall be sender-constrained with DPoP (RFC 9449) or mutual TLS (RFC 8705) (§5.3.2.1); dpop is nil")
        }
        guard !allowsPasswordGrant else {
            throw broken("the resource owner password credentials grant shall not be used (§5.3.1.1); allowsPasswordGrant is on")
        }
        let permitted = SecurityProfile.fapi2Algorithms.map(\.rawValue).sorted().joined(separator: ", ")
        if let key = clientAssertionKey, !SecurityProfile.fapi2Algorithms.contains(key.algorithm) {
            throw broken("only \(permitted) are permitted (§5.4); the client's key signs \(key.algorithm.rawValue)")
        }
        if let dpop {
            guard let algorithm = dpop.algorithm, SecurityProfile.fapi2Algorithms.contains(algorithm) else {
                throw broken(
                    "only \(permitted) are permitted (§5.4); the DPoP key algorithm is \(dpop.algorithm?.rawValue ?? "unset (DPoPSettings.algorithm)")"
                )
            }
        }
        if let openID {
            let refused = openID.signingAlgorithms.subtracting(SecurityProfile.fapi2Algorithms).map(\.rawValue).sorted()
            guard refused.isEmpty else {
                throw broken(
                    "only \(permitted) are permitted (§5.4); ID tokens signed with \(refused.joined(separator: ", ")) would be accepted (openID.signingAlgorithms)"
                )
            }
        }
        guard authorizationEndpoint != nil else { return }
        guard pushedAuthorization == .always, pushedAuthorizationRequestEndpoint != nil else {
            throw broken(
                "clients shall use pushed authorization requests (§5.3.2.2, RFC 9126); pushedAuthorization is \(pushedAuthorization)\(pushedAuthorizationRequestEndpoint == nil ? " and there is no pushed authorization request endpoint" : "")"
            )
        }
        guard requiresIssuerInRedirect, issuer != nil else {
            throw broken(
                "clients shall check iss in the authorization response (§5.3.2.2, RFC 9207); requiresIssuerInRedirect is off or there is no issuer"
            )
        }
    }
}
