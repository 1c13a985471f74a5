#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A client's metadata (RFC 7591 §2): what it sends to register dynamically,
/// and what a client ID metadata document (an `https` URL as `client_id`)
/// publishes. Holds no secret.
public struct ClientMetadata: Sendable, Hashable, Codable {
    /// `redirect_uris`.
    public var redirectURIs: [URL]
    /// `client_name`, shown to the user on the consent page.
    public var clientName: String?
    /// `grant_types`; the default is the code flow with refresh.
    public var grantTypes: [String]
    /// `response_types`.
    public var responseTypes: [String]
    /// `token_endpoint_auth_method`: `none` (a public client, the default), `client_secret_basic`, `client_secret_post`, ….
    public var tokenEndpointAuthMethod: String
    /// `scope`, space-separated, or `nil`.
    public var scope: String?
    /// `client_uri`.
    public var clientURI: URL?
    /// `logo_uri`.
    public var logoURI: URL?
    /// `software_id`.
    public var softwareID: String?
    /// `software_version`.
    public var softwareVersion: String?
    /// `contacts`.
    public var contacts: [String]
    /// `dpop_bound_access_tokens` (RFC 9449 §5.2), or `nil` to leave it out.
    public var dpopBoundAccessTokens: Bool?

    enum CodingKeys: String, CodingKey {
        case redirectURIs = "redirect_uris"
        case clientName = "client_name"
        case grantTypes = "grant_types"
        case responseTypes = "response_types"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method"
        case scope
        case clientURI = "client_uri"
        case logoURI = "logo_uri"
        case softwareID = "software_id"
        case softwareVersion = "software_version"
        case contacts
        case dpopBoundAccessTokens = "dpop_bound_access_tokens"
    }

    /// Creates metadata; the defaults describe a public client of the code flow with refresh.
    public init(
        redirectURIs: [URL],
        clientName: String? = nil,
        grantTypes: [String] = ["authorization_code", "refresh_token"],
        responseTypes: [String] = ["code"],
        tokenEndpointAuthMethod: String = "none",
        scope: String? = nil,
        clientURI: URL? = nil,
        logoURI: URL? = nil,
        softwareID: String? = nil,
        softwareVersion: String? = nil,
        contacts: [String] = [],
        dpopBoundAccessTokens: Bool? = nil
    ) {
        self.redirectURIs = redirectURIs
        self.clientName = clientName
        self.grantTypes = grantTypes
        self.responseTypes = responseTypes
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.scope = scope
        self.clientURI = clientURI
        self.logoURI = logoURI
        self.softwareID = softwareID
        self.softwareVersion = softwareVersion
        self.contacts = contacts
        self.dpopBoundAccessTokens = dpopBoundAccessTokens
    }
}

/// A dynamic client registration (RFC 7591 §3.2.1) as the authorization
/// server answered it: kept in a ``ClientRecordStore`` (sealed like tokens),
/// bound to the server that issued it, and reused until that server forgets it.
///
/// ``clientSecret`` and ``registrationAccessToken`` are ``Secret``s: they
/// never appear in a description, a log line or an error.
public struct ClientRegistration: Sendable, Hashable, Codable {
    /// The issuer identifier of the authorization server that registered the client.
    public var issuer: String
    /// `client_id`.
    public var clientID: String
    /// `client_secret`, for a confidential client.
    public var clientSecret: Secret?
    /// `client_secret_expires_at`; `nil` when it does not expire (RFC 7591 sends 0).
    public var clientSecretExpiresAt: Date?
    /// `client_id_issued_at`.
    public var clientIDIssuedAt: Date?
    /// RFC 7592's `registration_access_token`, to read, update or delete the registration.
    public var registrationAccessToken: Secret?
    /// RFC 7592's `registration_client_uri`.
    public var registrationClientURI: URL?
    /// The metadata the server registered, which may differ from what was sent.
    public var metadata: ClientMetadata

    /// Creates a registration.
    public init(
        issuer: String,
        clientID: String,
        clientSecret: Secret? = nil,
        clientSecretExpiresAt: Date? = nil,
        clientIDIssuedAt: Date? = nil,
        registrationAccessToken: Secret? = nil,
        registrationClientURI: URL? = nil,
        metadata: ClientMetadata
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.clientSecretExpiresAt = clientSecretExpiresAt
        self.clientIDIssuedAt = clientIDIssuedAt
        self.registrationAccessToken = registrationAccessToken
        self.registrationClientURI = registrationClientURI
        self.metadata = metadata
    }
}

extension ClientRegistration {
    /// Decodes a registration, its client secret opaque again: ``Secret``'s
    /// own decoding would let the redacted form show the secret's first characters.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            issuer: try container.decode(String.self, forKey: .issuer),
            clientID: try container.decode(String.self, forKey: .clientID),
            clientSecret: try container.decodeIfPresent(Secret.self, forKey: .clientSecret)?.opaque,
            clientSecretExpiresAt: try container.decodeIfPresent(Date.self, forKey: .clientSecretExpiresAt),
            clientIDIssuedAt: try container.decodeIfPresent(Date.self, forKey: .clientIDIssuedAt),
            registrationAccessToken: try container.decodeIfPresent(Secret.self, forKey: .registrationAccessToken),
            registrationClientURI: try container.decodeIfPresent(URL.self, forKey: .registrationClientURI),
            metadata: try container.decode(ClientMetadata.self, forKey: .metadata)
        )
    }

    enum CodingKeys: String, CodingKey {
        case issuer, clientID, clientSecret, clientSecretExpiresAt, clientIDIssuedAt, registrationAccessToken, registrationClientURI,
            metadata
    }
}
