#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A client ID metadata document (draft-ietf-oauth-client-id-metadata-document):
/// the JSON an app hosts at an `https` URL that it then uses as its
/// `client_id`, so that a server that advertises
/// `client_id_metadata_document_supported` learns the client by fetching it,
/// without any registration.
///
/// ```swift
/// let document = try ClientIDMetadataDocument(
///     clientID: URL(string: "https://app.example/oauth/client.json")!,
///     metadata: ClientMetadata(redirectURIs: [callback], clientName: "My App"))
/// // serve document.json() at that URL, as application/json
/// ```
public struct ClientIDMetadataDocument: Sendable, Hashable {
    /// The document's URL, which is the client's `client_id`.
    public let clientID: URL
    /// What the document says about the client.
    public let metadata: ClientMetadata

    /// Creates a document for `metadata`, hosted at `clientID`.
    ///
    /// - Throws: `invalid_configuration` when `clientID` is not a client ID
    ///   URL (``validate(clientID:)``), or when `metadata` authenticates with
    ///   a shared secret (`client_secret_basic`, `client_secret_post`,
    ///   `client_secret_jwt`), which a public document cannot carry.
    public init(clientID: URL, metadata: ClientMetadata) throws(OAuth2Error) {
        try Self.validate(clientID: clientID)
        guard !metadata.tokenEndpointAuthMethod.hasPrefix("client_secret_") else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "a client ID metadata document cannot use \(OAuth2Error.sanitize(String(metadata.tokenEndpointAuthMethod.prefix(40)))): a shared secret has no place in a public document"
            )
        }
        self.clientID = clientID
        self.metadata = metadata
    }

    /// The document's JSON: the metadata's RFC 7591 fields (absent ones left
    /// out) and `client_id` equal to ``clientID``, as the draft requires.
    public func json() throws(OAuth2Error) -> Data {
        var object = try RegistrationMessage.object(of: metadata)
        object["client_id"] = .string(clientID.absoluteString)
        return try RegistrationMessage.encode(object)
    }

    /// Throws unless `url` may be a client ID (the draft's §3): `https`, with
    /// a host and a path other than `/`, no fragment, no user name or
    /// password, and no `.` or `..` path segment (also percent-encoded),
    /// which a server would resolve to another URL than the `client_id` it compares.
    ///
    /// - Throws: `invalid_configuration` naming the rule broken.
    public static func validate(clientID url: URL) throws(OAuth2Error) {
        func refuse(_ problem: String) -> OAuth2Error {
            OAuth2Error(code: .invalidConfiguration, message: "the client ID metadata document URL \(problem)")
        }
        guard url.scheme?.lowercased() == "https" else { throw refuse("must be https") }
        guard let host = url.host(percentEncoded: true), !host.isEmpty else { throw refuse("has no host") }
        guard url.user == nil, url.password == nil else { throw refuse("must not have a user name or password") }
        guard url.fragment == nil else { throw refuse("must not have a fragment") }
        let path = url.path(percentEncoded: true)
        guard !path.isEmpty, path != "/" else { throw refuse("must have a path") }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = segment.lowercased().replacing("%2e", with: ".")
            guard decoded != "." && decoded != ".." else { throw refuse("must not have a . or .. path segment") }
        }
    }
}
