#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A protected resource's metadata (RFC 9728 §2): which authorization servers
/// issue tokens for it, and how it takes them.
///
/// Read from the URL a resource's `WWW-Authenticate: Bearer resource_metadata="…"`
/// names, or from the well-known URIs of the URL the app asked for
/// (RFC 9728 §3.1), under ``DiscoveryRules``.
public struct ProtectedResourceMetadata: Sendable, Hashable, Codable {
    /// The resource identifier (`resource`): an `https` URL without a fragment.
    public let resource: String
    /// The issuer identifiers of the authorization servers (`authorization_servers`), in the resource's order.
    public let authorizationServers: [String]
    /// The scopes the resource uses (`scopes_supported`).
    public let scopesSupported: [String]
    /// How the resource takes a token (`bearer_methods_supported`: `header`, `body`, `query`).
    public let bearerMethodsSupported: [String]
    /// The JWS algorithms it accepts in DPoP proofs (`dpop_signing_alg_values_supported`).
    public let dpopSigningAlgValuesSupported: [String]
    /// Whether it accepts DPoP-bound tokens only (`dpop_bound_access_tokens_required`).
    public let dpopBoundAccessTokensRequired: Bool
    /// Whether it accepts certificate-bound tokens (`tls_client_certificate_bound_access_tokens`).
    public let tlsClientCertificateBoundAccessTokens: Bool
    /// Its human-readable name (`resource_name`), untrusted text.
    public let resourceName: String?

    enum CodingKeys: String, CodingKey {
        case resource
        case authorizationServers = "authorization_servers"
        case scopesSupported = "scopes_supported"
        case bearerMethodsSupported = "bearer_methods_supported"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
        case dpopBoundAccessTokensRequired = "dpop_bound_access_tokens_required"
        case tlsClientCertificateBoundAccessTokens = "tls_client_certificate_bound_access_tokens"
        case resourceName = "resource_name"
    }

    /// Creates metadata.
    public init(
        resource: String,
        authorizationServers: [String],
        scopesSupported: [String] = [],
        bearerMethodsSupported: [String] = [],
        dpopSigningAlgValuesSupported: [String] = [],
        dpopBoundAccessTokensRequired: Bool = false,
        tlsClientCertificateBoundAccessTokens: Bool = false,
        resourceName: String? = nil
    ) {
        self.resource = resource
        self.authorizationServers = authorizationServers
        self.scopesSupported = scopesSupported
        self.bearerMethodsSupported = bearerMethodsSupported
        self.dpopSigningAlgValuesSupported = dpopSigningAlgValuesSupported
        self.dpopBoundAccessTokensRequired = dpopBoundAccessTokensRequired
        self.tlsClientCertificateBoundAccessTokens = tlsClientCertificateBoundAccessTokens
        self.resourceName = resourceName
    }
}

/// The rules every document fetched on the way from a resource URL to a
/// token is held to (RFC 9728 §7, MCP authorization §Security): what may be
/// fetched, how big it may be, and how long it is kept.
///
/// Nothing is fetched that the app did not point at: a resource's metadata
/// only from the resource's own origin, an authorization server's metadata
/// only for an issuer the resource's metadata names and these rules allow.
/// Redirects are never followed.
public struct DiscoveryRules: Sendable, Hashable {
    /// The largest document accepted (metadata, registration answers).
    public var maxDocumentSize: Int
    /// How long fetched metadata is used before it is fetched again.
    public var cacheLifetime: Duration
    /// The only authorization servers (issuer identifiers, exactly) a resource
    /// may send the client to; `nil` allows any that passes the other rules.
    public var allowedAuthorizationServers: Set<String>?
    /// Whether a resource that is not itself on a loopback or private address
    /// may name an authorization server on one. Off: a public resource cannot
    /// make the client fetch internal URLs.
    public var allowsPrivateAuthorizationServers: Bool
    /// The longest a fetch may take; the transport's default when `nil`.
    public var timeout: Duration?
    /// Whether every request made under these rules may connect only to
    /// public addresses, checked after DNS on each connection
    /// (``HTTPTransportRequest/connectsOnlyToPublicAddresses``): what the
    /// checks of the URLs' text cannot see, a DNS name that resolves to a
    /// loopback or private address, is then refused too (`insecure_endpoint`).
    ///
    /// For a server that discovers resources on behalf of users it does not
    /// trust. It covers discovery, WebFinger and registration; in a
    /// ``ProtectedResourceClient``, also the resource calls and every
    /// request to the authorization server
    /// (``OAuth2Configuration/connectsOnlyToPublicAddresses``). Off by
    /// default: an intranet's services resolve to private addresses.
    /// ``CurlTransport`` enforces it; a transport that cannot check ignores it.
    public var connectsOnlyToPublicAddresses: Bool

    /// Creates rules; the defaults suit a client that talks to public services.
    public init(
        maxDocumentSize: Int = 64 * 1024,
        cacheLifetime: Duration = .seconds(3600),
        allowedAuthorizationServers: Set<String>? = nil,
        allowsPrivateAuthorizationServers: Bool = false,
        timeout: Duration? = .seconds(30),
        connectsOnlyToPublicAddresses: Bool = false
    ) {
        self.maxDocumentSize = maxDocumentSize
        self.cacheLifetime = cacheLifetime
        self.allowedAuthorizationServers = allowedAuthorizationServers
        self.allowsPrivateAuthorizationServers = allowsPrivateAuthorizationServers
        self.timeout = timeout
        self.connectsOnlyToPublicAddresses = connectsOnlyToPublicAddresses
    }

    /// `transport`, made to send every request with
    /// ``HTTPTransportRequest/connectsOnlyToPublicAddresses`` when these rules ask for it.
    func guarding(_ transport: any HTTPTransport) -> any HTTPTransport {
        PublicAddressTransport.wrapping(transport, if: connectsOnlyToPublicAddresses)
    }
}

/// What discovery learned about one resource, kept so that the next call to
/// it needs no round trip: the resource's metadata and the authorization
/// server chosen for it. Codable, for ``ClientRecordStore``; holds no secret.
public struct DiscoveredResource: Sendable, Hashable, Codable {
    /// The URL the app asked for, as the key the record is found by.
    public var requestedURL: URL
    /// The resource's metadata, as checked.
    public var metadata: ProtectedResourceMetadata
    /// The authorization server's metadata chosen among ``ProtectedResourceMetadata/authorizationServers``.
    public var authorizationServer: AuthorizationServerMetadata
    /// When the documents were fetched.
    public var fetchedAt: Date

    /// Creates a record.
    public init(requestedURL: URL, metadata: ProtectedResourceMetadata, authorizationServer: AuthorizationServerMetadata, fetchedAt: Date) {
        self.requestedURL = requestedURL
        self.metadata = metadata
        self.authorizationServer = authorizationServer
        self.fetchedAt = fetchedAt
    }
}
