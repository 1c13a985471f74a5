#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What an authorization server publishes about itself (RFC 8414, or OpenID
/// Connect Discovery 1.0 §3 for an OpenID provider), the fields this client uses.
///
/// Codable with the RFC's field names, so it can be cached as the server
/// sent it; discovery (``MetadataCache/metadata(issuer:issuerRule:timeout:)``) checks it.
public struct AuthorizationServerMetadata: Sendable, Codable, Hashable {
    /// The issuer identifier; equal to the one the metadata was fetched for.
    public let issuer: String
    /// The authorization endpoint, for the authorization code flow.
    public let authorizationEndpoint: URL?
    /// The token endpoint.
    public let tokenEndpoint: URL?
    /// The revocation endpoint (RFC 7009).
    public let revocationEndpoint: URL?
    /// The device authorization endpoint (RFC 8628).
    public let deviceAuthorizationEndpoint: URL?
    /// Whether redirects carry `iss` (RFC 9207); when true, a redirect without it is refused.
    public let authorizationResponseIssParameterSupported: Bool
    /// The PKCE methods the server supports; empty when it did not say.
    public let codeChallengeMethodsSupported: [String]
    /// The client authentication methods of the token endpoint; empty when it did not say
    /// (RFC 8414 then means `client_secret_basic`).
    public let tokenEndpointAuthMethodsSupported: [String]
    /// The provider's JSON Web Key Set (`jwks_uri`): the keys its ID tokens are signed with.
    public let jwksURI: URL?
    /// The OpenID Connect userinfo endpoint.
    public let userinfoEndpoint: URL?
    /// The OpenID Connect RP-initiated logout endpoint (`end_session_endpoint`).
    public let endSessionEndpoint: URL?
    /// The JWS algorithms the provider signs ID tokens with; empty when it did not say.
    public let idTokenSigningAlgValuesSupported: [String]
    /// The scopes the provider supports; empty when it did not say.
    public let scopesSupported: [String]
    /// The pushed authorization request endpoint (RFC 9126 §5), when the provider has one.
    public let pushedAuthorizationRequestEndpoint: URL?
    /// Whether the provider accepts authorization requests only through its
    /// pushed authorization request endpoint (RFC 9126 §5).
    public let requirePushedAuthorizationRequests: Bool
    /// The JWS algorithms the provider accepts for signed request objects
    /// (RFC 9101 §10.5, OpenID Connect Discovery §3); empty when it did not say.
    public let requestObjectSigningAlgValuesSupported: [String]
    /// Whether the provider accepts authorization requests only as signed
    /// request objects (RFC 9101 §10.5, `require_signed_request_object`).
    public let requireSignedRequestObject: Bool
    /// Whether the provider fetches request objects passed by reference
    /// (`request_uri_parameter_supported`, OpenID Connect Discovery §3);
    /// true when it did not say, as that section's default is.
    public let requestURIParameterSupported: Bool
    /// The JWS algorithms the provider accepts in DPoP proofs (RFC 9449 §5.1);
    /// empty when it did not say. A new DPoP key is made for one of them
    /// (``DPoPKey/algorithm(preferred:providerAlgorithms:)``).
    public let dpopSigningAlgValuesSupported: [String]
    /// The endpoints to use with mutual TLS instead of the usual ones (RFC
    /// 8705 §5 `mtls_endpoint_aliases`), by metadata name (`token_endpoint`,
    /// `revocation_endpoint`, …); empty when it did not say.
    public let mtlsEndpointAliases: [String: URL]
    /// RFC 7591's `registration_endpoint`: where a client registers itself
    /// dynamically, when the server allows it.
    public let registrationEndpoint: URL?
    /// `client_id_metadata_document_supported` (OAuth Client ID Metadata
    /// Document draft, MCP 2025-11): the server accepts an `https` URL as a
    /// `client_id` and reads the client's metadata from it.
    public let clientIDMetadataDocumentSupported: Bool

    /// Whether this is an OpenID provider's metadata: it names a `jwks_uri`
    /// to verify ID tokens with.
    public var isOpenIDProvider: Bool { jwksURI != nil }

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case jwksURI = "jwks_uri"
        case userinfoEndpoint = "userinfo_endpoint"
        case endSessionEndpoint = "end_session_endpoint"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case scopesSupported = "scopes_supported"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case requirePushedAuthorizationRequests = "require_pushed_authorization_requests"
        case requestObjectSigningAlgValuesSupported = "request_object_signing_alg_values_supported"
        case requireSignedRequestObject = "require_signed_request_object"
        case requestURIParameterSupported = "request_uri_parameter_supported"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
        case mtlsEndpointAliases = "mtls_endpoint_aliases"
        case registrationEndpoint = "registration_endpoint"
        case clientIDMetadataDocumentSupported = "client_id_metadata_document_supported"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        issuer = try container.decode(String.self, forKey: .issuer)
        authorizationEndpoint = try container.decodeIfPresent(URL.self, forKey: .authorizationEndpoint)
        tokenEndpoint = try container.decodeIfPresent(URL.self, forKey: .tokenEndpoint)
        revocationEndpoint = try container.decodeIfPresent(URL.self, forKey: .revocationEndpoint)
        deviceAuthorizationEndpoint = try container.decodeIfPresent(URL.self, forKey: .deviceAuthorizationEndpoint)
        authorizationResponseIssParameterSupported =
            try container.decodeIfPresent(Bool.self, forKey: .authorizationResponseIssParameterSupported) ?? false
        codeChallengeMethodsSupported = try container.decodeIfPresent([String].self, forKey: .codeChallengeMethodsSupported) ?? []
        tokenEndpointAuthMethodsSupported = try container.decodeIfPresent([String].self, forKey: .tokenEndpointAuthMethodsSupported) ?? []
        jwksURI = try container.decodeIfPresent(URL.self, forKey: .jwksURI)
        userinfoEndpoint = try container.decodeIfPresent(URL.self, forKey: .userinfoEndpoint)
        endSessionEndpoint = try container.decodeIfPresent(URL.self, forKey: .endSessionEndpoint)
        idTokenSigningAlgValuesSupported = try container.decodeIfPresent([String].self, forKey: .idTokenSigningAlgValuesSupported) ?? []
        scopesSupported = try container.decodeIfPresent([String].self, forKey: .scopesSupported) ?? []
        pushedAuthorizationRequestEndpoint = try container.decodeIfPresent(URL.self, forKey: .pushedAuthorizationRequestEndpoint)
        requirePushedAuthorizationRequests =
            try container.decodeIfPresent(Bool.self, forKey: .requirePushedAuthorizationRequests) ?? false
        requestObjectSigningAlgValuesSupported =
            try container.decodeIfPresent([String].self, forKey: .requestObjectSigningAlgValuesSupported) ?? []
        requireSignedRequestObject = try container.decodeIfPresent(Bool.self, forKey: .requireSignedRequestObject) ?? false
        requestURIParameterSupported = try container.decodeIfPresent(Bool.self, forKey: .requestURIParameterSupported) ?? true
        dpopSigningAlgValuesSupported = try container.decodeIfPresent([String].self, forKey: .dpopSigningAlgValuesSupported) ?? []
        mtlsEndpointAliases = try container.decodeIfPresent([String: URL].self, forKey: .mtlsEndpointAliases) ?? [:]
        registrationEndpoint = try container.decodeIfPresent(URL.self, forKey: .registrationEndpoint)
        clientIDMetadataDocumentSupported =
            try container.decodeIfPresent(Bool.self, forKey: .clientIDMetadataDocumentSupported) ?? false
    }

    /// Creates metadata.
    public init(
        issuer: String,
        authorizationEndpoint: URL? = nil,
        tokenEndpoint: URL? = nil,
        revocationEndpoint: URL? = nil,
        deviceAuthorizationEndpoint: URL? = nil,
        authorizationResponseIssParameterSupported: Bool = false,
        codeChallengeMethodsSupported: [String] = [],
        tokenEndpointAuthMethodsSupported: [String] = [],
        jwksURI: URL? = nil,
        userinfoEndpoint: URL? = nil,
        endSessionEndpoint: URL? = nil,
        idTokenSigningAlgValuesSupported: [String] = [],
        scopesSupported: [String] = [],
        pushedAuthorizationRequestEndpoint: URL? = nil,
        requirePushedAuthorizationRequests: Bool = false,
        requestObjectSigningAlgValuesSupported: [String] = [],
        requireSignedRequestObject: Bool = false,
        requestURIParameterSupported: Bool = true,
        dpopSigningAlgValuesSupported: [String] = [],
        mtlsEndpointAliases: [String: URL] = [:],
        registrationEndpoint: URL? = nil,
        clientIDMetadataDocumentSupported: Bool = false
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.authorizationResponseIssParameterSupported = authorizationResponseIssParameterSupported
        self.codeChallengeMethodsSupported = codeChallengeMethodsSupported
        self.tokenEndpointAuthMethodsSupported = tokenEndpointAuthMethodsSupported
        self.jwksURI = jwksURI
        self.userinfoEndpoint = userinfoEndpoint
        self.endSessionEndpoint = endSessionEndpoint
        self.idTokenSigningAlgValuesSupported = idTokenSigningAlgValuesSupported
        self.scopesSupported = scopesSupported
        self.pushedAuthorizationRequestEndpoint = pushedAuthorizationRequestEndpoint
        self.requirePushedAuthorizationRequests = requirePushedAuthorizationRequests
        self.requestObjectSigningAlgValuesSupported = requestObjectSigningAlgValuesSupported
        self.requireSignedRequestObject = requireSignedRequestObject
        self.requestURIParameterSupported = requestURIParameterSupported
        self.dpopSigningAlgValuesSupported = dpopSigningAlgValuesSupported
        self.mtlsEndpointAliases = mtlsEndpointAliases
        self.registrationEndpoint = registrationEndpoint
        self.clientIDMetadataDocumentSupported = clientIDMetadataDocumentSupported
    }

    /// `endpoint`, the metadata's `name` (`token_endpoint`), or its mutual TLS
    /// alias when `mutualTLS` and the metadata names one (RFC 8705 §5).
    package func endpoint(_ endpoint: URL?, named name: String, mutualTLS: Bool) -> URL? {
        guard mutualTLS, let alias = mtlsEndpointAliases[name] else { return endpoint }
        return alias
    }

    /// Parses a metadata document fetched for `expectedIssuer` (a `Retry-After`
    /// date on a 429 is read relative to `requestedAt`, when given).
    ///
    /// - Throws: the status errors of ``TokenResponseParser``
    ///   (`response_too_large`, `unexpected_redirect`, `rate_limited`,
    ///   `http_error`, a provider error); `issuer_mismatch` when `issuer` is
    ///   missing or not exactly `expectedIssuer` (RFC 8414 §3.3: metadata
    ///   for another issuer must not be used), or, with a template
    ///   `issuerRule`, not a template of it; `insecure_endpoint` when an
    ///   endpoint is not `https` (nor loopback `http`);
    ///   `invalid_token_response` when the body is not a JSON object or a
    ///   field has the wrong type (the contract has no metadata-specific code).
    static func parse(
        _ response: HTTPTransportResponse,
        expectedIssuer: String,
        issuerRule: IssuerRule = .exact,
        requestedAt: Date? = nil,
        maxBodySize: Int = 1 << 20
    ) throws(OAuth2Error) -> AuthorizationServerMetadata {
        let endpoint = "metadata endpoint"
        try ProviderResponse.requireSuccess(response, endpoint: endpoint, maxBodySize: maxBodySize, now: requestedAt)
        let object = try ProviderResponse.object(of: response, endpoint: endpoint)
        func invalid(_ problem: String) -> OAuth2Error {
            OAuth2Error(code: .invalidTokenResponse, message: "the \(endpoint)'s answer \(problem)", httpStatus: response.status.code)
        }

        guard let issuer = object["issuer"]?.stringValue, issuerRule.acceptsMetadataIssuer(issuer, requested: expectedIssuer) else {
            throw OAuth2Error(
                code: .issuerMismatch,
                message: "the authorization server metadata is not for the issuer \(expectedIssuer)",
                httpStatus: response.status.code
            )
        }
        func endpointURL(_ key: CodingKeys, role: String) throws(OAuth2Error) -> URL? {
            guard let value = object[key.rawValue], value != .null else { return nil }
            guard let text = value.stringValue, let parts = URLParts(text[...]), parts.isHTTP,
                !(parts.host ?? "").isEmpty, let url = URL(string: text)
            else {
                throw invalid("has a \(key.rawValue) that is not an absolute http(s) URL")
            }
            try EndpointPolicy.requireSecure(url, role: role)
            return url
        }
        func strings(_ key: CodingKeys) throws(OAuth2Error) -> [String] {
            try ProviderResponse.strings(key.rawValue, in: object, invalid) ?? []
        }
        func flag(_ key: CodingKeys) throws(OAuth2Error) -> Bool {
            try ProviderResponse.flag(key.rawValue, in: object, invalid) ?? false
        }
        var aliases: [String: URL] = [:]
        switch object[CodingKeys.mtlsEndpointAliases.rawValue] {
        case nil, .null?:
            break
        case .object(let members)?:
            for (name, value) in members {
                guard let text = value.stringValue, let parts = URLParts(text[...]), parts.isHTTP,
                    !(parts.host ?? "").isEmpty, let url = URL(string: text)
                else {
                    throw invalid("has an mtls_endpoint_aliases \(name) that is not an absolute http(s) URL")
                }
                try EndpointPolicy.requireSecure(url, role: "mutual TLS \(name)")
                aliases[name] = url
            }
        default:
            throw invalid("has an mtls_endpoint_aliases that is not an object")
        }

        return AuthorizationServerMetadata(
            issuer: issuer,
            authorizationEndpoint: try endpointURL(.authorizationEndpoint, role: "authorization endpoint"),
            tokenEndpoint: try endpointURL(.tokenEndpoint, role: "token endpoint"),
            revocationEndpoint: try endpointURL(.revocationEndpoint, role: "revocation endpoint"),
            deviceAuthorizationEndpoint: try endpointURL(.deviceAuthorizationEndpoint, role: "device authorization endpoint"),
            authorizationResponseIssParameterSupported: try flag(.authorizationResponseIssParameterSupported),
            codeChallengeMethodsSupported: try strings(.codeChallengeMethodsSupported),
            tokenEndpointAuthMethodsSupported: try strings(.tokenEndpointAuthMethodsSupported),
            jwksURI: try endpointURL(.jwksURI, role: "JWKS endpoint"),
            userinfoEndpoint: try endpointURL(.userinfoEndpoint, role: "userinfo endpoint"),
            endSessionEndpoint: try endpointURL(.endSessionEndpoint, role: "end-session endpoint"),
            idTokenSigningAlgValuesSupported: try strings(.idTokenSigningAlgValuesSupported),
            scopesSupported: try strings(.scopesSupported),
            pushedAuthorizationRequestEndpoint: try endpointURL(
                .pushedAuthorizationRequestEndpoint, role: "pushed authorization request endpoint"),
            requirePushedAuthorizationRequests: try flag(.requirePushedAuthorizationRequests),
            requestObjectSigningAlgValuesSupported: try strings(.requestObjectSigningAlgValuesSupported),
            requireSignedRequestObject: try flag(.requireSignedRequestObject),
            requestURIParameterSupported: try ProviderResponse.flag(CodingKeys.requestURIParameterSupported.rawValue, in: object, invalid)
                ?? true,
            dpopSigningAlgValuesSupported: try strings(.dpopSigningAlgValuesSupported),
            mtlsEndpointAliases: aliases,
            registrationEndpoint: try endpointURL(.registrationEndpoint, role: "registration endpoint"),
            clientIDMetadataDocumentSupported: try flag(.clientIDMetadataDocumentSupported)
        )
    }

    /// The RFC 8414 §3.1 metadata URL of an issuer: `/.well-known/oauth-authorization-server`
    /// inserted between the host and the issuer's path (a trailing `/` of the path dropped).
    ///
    /// `https://id.example/tenant` → `https://id.example/.well-known/oauth-authorization-server/tenant`.
    ///
    /// - Throws: `invalid_configuration` when the issuer is not an absolute
    ///   `http(s)` URL or has a query or fragment (RFC 8414 §2);
    ///   `insecure_endpoint` when it is `http` for a non-loopback host.
    static func wellKnownURL(forIssuer issuer: String) throws(OAuth2Error) -> URL {
        try wellKnownURL(forIssuer: issuer, document: .oauthAuthorizationServer)
    }

    /// The metadata URL of an issuer for one kind of document:
    /// `oauth-authorization-server` inserted before the issuer's path (RFC 8414 §3.1),
    /// `openid-configuration` appended after it (OpenID Connect Discovery 1.0 §4.1).
    ///
    /// `https://id.example/tenant` → `https://id.example/tenant/.well-known/openid-configuration`.
    static func wellKnownURL(forIssuer issuer: String, document: Document) throws(OAuth2Error) -> URL {
        guard let parts = URLParts(issuer[...]), parts.isHTTP, let host = parts.host, !host.isEmpty else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the issuer is not an absolute http(s) URL")
        }
        guard parts.query == nil, parts.fragment == nil else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the issuer has a query or fragment (RFC 8414 §2)")
        }
        var path = parts.path
        if path.hasSuffix("/") { path = path.dropLast() }
        var text = "\(parts.scheme)://"
        if let userinfo = parts.userinfo { text += "\(userinfo)@" }
        text += host
        if let port = parts.port, !port.isEmpty { text += ":\(port)" }
        switch document {
        case .oauthAuthorizationServer: text += "/.well-known/oauth-authorization-server\(path)"
        case .openIDConfiguration: text += "\(path)/.well-known/openid-configuration"
        case .openIDConfigurationPathInserted: text += "/.well-known/openid-configuration\(path)"
        }
        guard let url = URL(string: text) else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the issuer's metadata URL could not be built")
        }
        try EndpointPolicy.requireSecure(url, role: "issuer")
        return url
    }

    /// Which metadata document to fetch for an issuer.
    enum Document: Sendable, Hashable {
        /// RFC 8414's `/.well-known/oauth-authorization-server`, inserted before the issuer's path.
        case oauthAuthorizationServer
        /// OpenID Connect Discovery's `/.well-known/openid-configuration`, appended to the issuer.
        case openIDConfiguration
        /// `/.well-known/openid-configuration` inserted before the issuer's
        /// path, as RFC 8414 §5 allows and the MCP authorization spec tries
        /// second for an issuer with a path.
        case openIDConfigurationPathInserted
    }
}
