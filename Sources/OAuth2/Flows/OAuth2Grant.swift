#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// How to get a token at the provider's token endpoint: one value per
/// grant, the same for ``OAuth2Provider`` and ``OAuth2Client``.
///
/// ``OAuth2Provider/token(for:)`` runs a grant and returns the token without
/// storing it (a server learns whose token it is from the token);
/// ``OAuth2Client/authenticate(_:)`` runs it and makes the token the
/// account's. Starting a flow is not a grant: the authorization URL
/// (``OAuth2Provider/authorizationURL(redirectURI:scopes:additionalParameters:)``)
/// and the device code (``OAuth2Provider/startDeviceAuthorization(scopes:)``)
/// come first, and the grant finishes what they started.
///
/// ```swift
/// let token = try await provider.token(for: .authorizationCode(redirect: callbackURL, pending: pending))
/// try await provider.client(account: "robot").authenticate(.clientCredentials)
/// ```
///
/// Where a grant takes `scopes`, `nil` asks for the configuration's
/// ``OAuth2Configuration/defaultScopes``. A grant may hold a secret (a
/// password, an assertion, the code in a redirect): its `description` and
/// its mirror (what `dump` prints) name the grant only.
public struct OAuth2Grant: Sendable, CustomStringConvertible, CustomReflectable {
    /// What the grant sends, as the caller gave it.
    enum Kind: Sendable {
        case authorizationCode(AuthorizationCallback, pending: PendingAuthorization?)
        case password(username: String, password: Secret, scopes: [String]?)
        case clientCredentials(scopes: [String]?)
        case configuredAssertion(scopes: [String]?)
        case assertion(type: String, assertion: Secret, scopes: [String]?)
        case deviceCode(DeviceAuthorization, scopes: [String]?)
    }

    let kind: Kind

    /// The authorization code grant (RFC 6749 §4.1): finishes the user-agent
    /// flow with the redirect the provider sent the user to.
    ///
    /// The redirect is checked in this order: its scheme, host, port and path
    /// equal the redirect URI that was sent; `state` is present and equal;
    /// then `error` or `code`; a repeated parameter is an error; `iss` is
    /// compared (RFC 9207). A state is accepted once across the provider.
    ///
    /// - Parameters:
    ///   - redirect: the URL the provider sent the user to, as received or pasted.
    ///   - pending: what ``OAuth2Provider/authorizationURL(redirectURI:scopes:additionalParameters:)``
    ///     returned, kept by the caller (in a session, say). `nil` asks an
    ///     ``OAuth2Client`` for the one its own `authorizationURL` remembers;
    ///     a provider has none to remember and refuses it (`state_mismatch`).
    public static func authorizationCode(redirect: String, pending: PendingAuthorization? = nil) -> OAuth2Grant {
        OAuth2Grant(kind: .authorizationCode(.redirect(redirect), pending: pending))
    }

    /// The authorization code grant with the redirect as a URL; see ``authorizationCode(redirect:pending:)-(String,_)``.
    public static func authorizationCode(redirect: URL, pending: PendingAuthorization? = nil) -> OAuth2Grant {
        authorizationCode(redirect: redirect.absoluteString, pending: pending)
    }

    /// The authorization code grant finished by a response the provider posted
    /// to the redirect URI (`response_mode=form_post`; Sign in with Apple).
    ///
    /// The same checks as a redirect's, in the same order, except the URL's:
    /// `state` present and equal, `iss` compared when sent (RFC 9207) and
    /// required when the provider promised it, then `error` or `code`; a
    /// state is accepted once across the provider. Read the response's
    /// ``FormPostResponse/user`` after this grant succeeded, never before.
    ///
    /// - Parameters:
    ///   - response: the POST's body, parsed.
    ///   - pending: as for ``authorizationCode(redirect:pending:)-(String,_)``.
    public static func authorizationCode(formPost response: FormPostResponse, pending: PendingAuthorization? = nil) -> OAuth2Grant {
        OAuth2Grant(kind: .authorizationCode(.formPost(response), pending: pending))
    }

    /// The resource owner password grant (RFC 6749 §4.3).
    ///
    /// Only when the configuration opts in (``OAuth2Configuration/allowsPasswordGrant``):
    /// the grant is deprecated (RFC 9700 §2.4). The password is sent once and not kept.
    public static func password(username: String, password: Secret, scopes: [String]? = nil) -> OAuth2Grant {
        OAuth2Grant(kind: .password(username: username, password: password, scopes: scopes))
    }

    /// The client credentials grant (RFC 6749 §4.4) with the configuration's
    /// default scopes: a token for the client itself. Needs a confidential
    /// client. An account's client renews such a token by itself when it expires.
    public static let clientCredentials = OAuth2Grant(kind: .clientCredentials(scopes: nil))

    /// The client credentials grant asking for `scopes`; see ``clientCredentials``.
    public static func clientCredentials(scopes: [String]?) -> OAuth2Grant {
        OAuth2Grant(kind: .clientCredentials(scopes: scopes))
    }

    /// The configuration's assertion grant (``OAuth2Configuration/assertionGrant``)
    /// with a fresh assertion and the default scopes: a token for a service
    /// account, which an account's client renews by itself, with a fresh
    /// assertion, whenever it expires or is rejected.
    public static let assertion = OAuth2Grant(kind: .configuredAssertion(scopes: nil))

    /// The configuration's assertion grant asking for `scopes`; see ``assertion``.
    public static func assertion(scopes: [String]?) -> OAuth2Grant {
        OAuth2Grant(kind: .configuredAssertion(scopes: scopes))
    }

    /// An assertion grant (RFC 7521) with an assertion the caller made, such
    /// as a JWT bearer assertion (RFC 7523: `urn:ietf:params:oauth:grant-type:jwt-bearer`).
    ///
    /// - Parameters:
    ///   - type: the `grant_type`, an absolute URI.
    ///   - assertion: the assertion, sent as `assertion`; never logged.
    ///   - scopes: the scopes to ask for.
    public static func assertion(type: String, assertion: Secret, scopes: [String]? = nil) -> OAuth2Grant {
        OAuth2Grant(kind: .assertion(type: type, assertion: assertion, scopes: scopes))
    }

    /// The device authorization grant (RFC 8628 §3.4): polls the token
    /// endpoint until the user approves the device, denies it, or the code expires.
    ///
    /// Waits the provider's interval between polls on the provider's clock,
    /// five seconds longer after each `slow_down` (RFC 8628 §3.5). Cancel the
    /// task to stop polling (`cancelled`).
    ///
    /// - Parameters:
    ///   - authorization: what ``OAuth2Provider/startDeviceAuthorization(scopes:)`` returned.
    ///   - scopes: the scopes the authorization was started with, recorded with the token.
    public static func deviceCode(_ authorization: DeviceAuthorization, scopes: [String]? = nil) -> OAuth2Grant {
        OAuth2Grant(kind: .deviceCode(authorization, scopes: scopes))
    }

    /// How the authorization response came back.
    enum AuthorizationCallback: Sendable {
        /// The URL the provider redirected the user to, as received or pasted.
        case redirect(String)
        /// The body the provider posted (`response_mode=form_post`).
        case formPost(FormPostResponse)

        /// Validates the response against the pending authorization and returns its code;
        /// `issuerRule` says which `iss` values name the expected issuer.
        func code(for pending: PendingAuthorization, issuerRule: IssuerRule = .exact) throws(OAuth2Error) -> Secret {
            switch self {
            case .redirect(let redirect): return try RedirectValidator.validate(redirect, pending: pending, issuerRule: issuerRule)
            case .formPost(let response): return try response.code(for: pending, issuerRule: issuerRule)
            }
        }
    }

    /// The grant's `grant_type` (the configured assertion grant's type is
    /// read from the configuration, so it shows as `assertion`); never a secret.
    public var description: String {
        "OAuth2Grant(\(type))"
    }

    /// The grant type only: the stored values would show `dump` the
    /// redirect's code, which is not a ``Secret`` until it is validated.
    public var customMirror: Mirror {
        Mirror(self, children: ["type": type], displayStyle: .struct)
    }

    /// The `grant_type` sent, or `assertion` for the configured assertion grant.
    private var type: String {
        switch kind {
        case .authorizationCode: return "authorization_code"
        case .password: return "password"
        case .clientCredentials: return "client_credentials"
        case .configuredAssertion: return "assertion"
        case .assertion(let type, _, _): return type
        case .deviceCode: return TokenRequestBuilder.deviceCodeGrantType
        }
    }
}
