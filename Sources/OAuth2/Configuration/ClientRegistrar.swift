#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Registers a client at an authorization server's registration endpoint
/// (RFC 7591) and manages the registration where the server offers it
/// (RFC 7592: read, update, delete with the registration access token).
public struct ClientRegistrar: Sendable {
    /// The authorization server registered with.
    public let metadata: AuthorizationServerMetadata
    /// The transport the requests go through.
    public let transport: any HTTPTransport
    /// The rules the answers are held to (size, timeout).
    public let rules: DiscoveryRules

    /// Creates a registrar for the server `metadata` describes.
    public init(metadata: AuthorizationServerMetadata, transport: any HTTPTransport, rules: DiscoveryRules = DiscoveryRules()) {
        self.metadata = metadata
        self.transport = transport
        self.rules = rules
    }

    /// Registers a client with `client` metadata (RFC 7591 §3.1).
    ///
    /// - Throws: `invalid_configuration` when the server has no
    ///   registration endpoint; the server's error (`invalid_redirect_uri`,
    ///   `invalid_client_metadata`, …); `invalid_registration_response`.
    public func register(_ client: ClientMetadata, initialAccessToken: Secret? = nil) async throws(OAuth2Error) -> ClientRegistration {
        throw OAuth2Error(code: .invalidConfiguration, message: "dynamic client registration is not built yet")
    }

    /// Reads the registration back (RFC 7592 §2.1).
    public func read(_ registration: ClientRegistration) async throws(OAuth2Error) -> ClientRegistration {
        throw OAuth2Error(code: .invalidConfiguration, message: "RFC 7592 is not built yet")
    }

    /// Replaces the registration's metadata (RFC 7592 §2.2).
    public func update(_ registration: ClientRegistration, to client: ClientMetadata) async throws(OAuth2Error) -> ClientRegistration {
        throw OAuth2Error(code: .invalidConfiguration, message: "RFC 7592 is not built yet")
    }

    /// Deletes the registration (RFC 7592 §2.3).
    public func delete(_ registration: ClientRegistration) async throws(OAuth2Error) {
        throw OAuth2Error(code: .invalidConfiguration, message: "RFC 7592 is not built yet")
    }
}
