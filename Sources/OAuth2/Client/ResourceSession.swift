#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One resource as a ``ProtectedResourceClient`` uses it: what discovery
/// learned, the identity the client has at its authorization server, and the
/// provider and client its tokens go through, keyed by the account that joins
/// server, resource and account (``ProtectedResourceClient/tokenAccount(authorizationServer:resource:account:)``).
final class ResourceSession: Sendable {
    /// What discovery learned.
    let record: DiscoveredResource
    /// The resource identifier (RFC 8707 `resource`) the tokens are for.
    let resource: URL
    /// The registration the client identifies with, when it registered (RFC 7591).
    let registration: ClientRegistration?
    /// The provider made from the authorization server's metadata and the identity.
    let provider: OAuth2Provider
    /// The client of the resource's tokens.
    let client: OAuth2Client
    /// What the first sign-in asks for.
    let initialRequest: StepUpRequest

    init(
        record: DiscoveredResource, resource: URL, registration: ClientRegistration?, provider: OAuth2Provider, tokenAccount: String,
        initialScopes: [String]
    ) {
        self.record = record
        self.resource = resource
        self.registration = registration
        self.provider = provider
        self.client = provider.client(account: tokenAccount)
        self.initialRequest = StepUpRequest(resource: resource, scopes: initialScopes)
    }

    /// Whether the documents it was made from are still within `lifetime` at `now`.
    func isFresh(at now: Date, lifetime: Duration) -> Bool {
        Self.isFresh(record, at: now, lifetime: lifetime)
    }

    /// Whether `record` was fetched less than `lifetime` before `now` (and
    /// not in the future, beyond a few minutes of clock skew).
    static func isFresh(_ record: DiscoveredResource, at now: Date, lifetime: Duration) -> Bool {
        now.timeIntervalSince(record.fetchedAt) < lifetime.timeInterval && now >= record.fetchedAt.addingTimeInterval(-300)
    }
}
