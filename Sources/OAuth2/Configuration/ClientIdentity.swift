#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// How a client that configures itself identifies itself to an authorization
/// server it has just discovered, in the MCP authorization spec's order of
/// preference:
///
/// 1. a client ID metadata document: ``metadataDocumentURL``, an `https` URL
///    the app hosts, used as the `client_id` when the server advertises
///    `client_id_metadata_document_supported`;
/// 2. dynamic registration (RFC 7591) with ``registrationMetadata``, when the
///    server has a `registration_endpoint`; the registration is kept in the
///    store and reused;
/// 3. a pre-registered ``clientID`` (and ``clientSecret``).
///
/// The first one the server supports is used; when none is,
/// `no_client_identity`.
public struct ClientIdentity: Sendable {
    /// The `https` URL of the client's metadata document, or `nil`.
    public var metadataDocumentURL: URL?
    /// The metadata to register with, or `nil` not to register.
    public var registrationMetadata: ClientMetadata?
    /// An initial access token for registration endpoints that want one (RFC 7591 §3).
    public var initialAccessToken: Secret?
    /// A client id registered by hand, or `nil`.
    public var clientID: String?
    /// The secret of ``clientID``, for a confidential client.
    public var clientSecret: Secret?

    /// Creates an identity; give at least one of the three ways.
    public init(
        metadataDocumentURL: URL? = nil,
        registrationMetadata: ClientMetadata? = nil,
        initialAccessToken: Secret? = nil,
        clientID: String? = nil,
        clientSecret: Secret? = nil
    ) {
        self.metadataDocumentURL = metadataDocumentURL
        self.registrationMetadata = registrationMetadata
        self.initialAccessToken = initialAccessToken
        self.clientID = clientID
        self.clientSecret = clientSecret
    }
}
