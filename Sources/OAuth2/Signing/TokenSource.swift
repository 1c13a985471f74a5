#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Gives a usable access token: what ``SigningTransport`` signs requests with.
///
/// ``OAuth2Client`` is one (refreshing, renewing and storing as it does);
/// an app may write its own, say one that reads a token another service
/// hands out. Implementations are called concurrently.
public protocol TokenSource: Sendable {
    /// A token to send now: valid beyond the source's expiry margin,
    /// refreshed or renewed first when needed.
    ///
    /// - Throws: an ``OAuth2Error`` when none can be had (`not_authenticated`,
    ///   `reauthorization_required`, …).
    func token() async throws -> AccessToken

    /// The resource server answered 401 to a request that carried `rejected`:
    /// a token to retry with once (refreshed, or one another caller obtained meanwhile).
    ///
    /// - Throws: an ``OAuth2Error`` when no other token can be had.
    func token(replacing rejected: AccessToken) async throws -> AccessToken

    /// The token ``token(replacing:)`` gave was rejected too; `error` is what
    /// the request then throws (`invalid_token`). The source may drop the
    /// token. The default does nothing.
    func tokenRejectedAfterRefresh(_ token: AccessToken, error: OAuth2Error) async

    /// The client certificate (mutual TLS) that requests signed with this
    /// source's tokens present, unless a request names its own; `nil` (the
    /// default) for none. A token bound to a certificate
    /// (``AccessToken/certificateThumbprint``) is only sent with that certificate.
    var clientCertificate: ClientCertificate? { get }
}

extension TokenSource {
    public func tokenRejectedAfterRefresh(_ token: AccessToken, error: OAuth2Error) async {}

    /// No certificate.
    public var clientCertificate: ClientCertificate? { nil }
}
