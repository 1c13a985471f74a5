#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Discovery itself, for ``MetadataCache`` and ``OAuth2Configuration/discover(issuer:clientID:clientSecret:transport:cache:clientCertificate:issuerRule:)``:
/// the two ways an app asks for an issuer's metadata.
extension AuthorizationServerMetadata {
    /// Fetches and checks one of an issuer's metadata documents: RFC 8414's
    /// `<issuer's origin>/.well-known/oauth-authorization-server<issuer's path>`
    /// (the default), or OpenID Connect's `<issuer>/.well-known/openid-configuration`.
    ///
    /// The answer must name exactly `issuer` (RFC 8414 §3.3, OpenID Connect
    /// Discovery §4.3) and its endpoints must be `https` (or loopback `http`).
    /// Redirects are not followed: metadata served from elsewhere is not the issuer's.
    ///
    /// - Parameters:
    ///   - issuer: the issuer identifier, an absolute `https` URL (or loopback `http`)
    ///     without query or fragment.
    ///   - document: which document to fetch.
    ///   - issuerRule: with a template rule, a document naming a template of
    ///     `issuer` is accepted too (``IssuerRule/template(placeholder:claim:allowed:)``).
    ///   - transport: the transport to fetch through.
    ///   - timeout: the longest the request may take; the transport's default when `nil`.
    ///   - maxResponseSize: the largest metadata document accepted.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` or `insecure_endpoint`
    ///   for an unusable issuer; `issuer_mismatch`; `unexpected_redirect`,
    ///   `http_error`, `invalid_token_response` and the other codes of a bad
    ///   answer; `timeout`, `tls_error`, `transport_error` when no answer came.
    static func fetch(
        issuer: String,
        document: Document = .oauthAuthorizationServer,
        issuerRule: IssuerRule = .exact,
        transport: any HTTPTransport,
        timeout: Duration? = nil,
        maxResponseSize: Int = 1 << 20
    ) async throws(OAuth2Error) -> AuthorizationServerMetadata {
        let url = try wellKnownURL(forIssuer: issuer, document: document)
        let request = HTTPTransportRequest.providerDocument(url, timeout: timeout, maxResponseSize: maxResponseSize)
        let requestedAt = Date()
        let response = try await OAuth2Error.performing(request, on: transport)
        return try parse(
            response, expectedIssuer: issuer, issuerRule: issuerRule, requestedAt: requestedAt, maxBodySize: maxResponseSize)
    }

    /// Discovers an issuer: its OpenID Connect configuration, or, when the
    /// issuer has none (HTTP 404), its RFC 8414 metadata.
    ///
    /// Both documents are held to the same rules as ``fetch(issuer:document:issuerRule:transport:timeout:maxResponseSize:)``.
    /// Any other failure of the first request is thrown as it is: a provider
    /// that is down is not taken for one without OpenID Connect.
    ///
    /// - Throws: ``OAuth2Error``, as ``fetch(issuer:document:issuerRule:transport:timeout:maxResponseSize:)``.
    static func discover(
        issuer: String,
        issuerRule: IssuerRule = .exact,
        transport: any HTTPTransport,
        timeout: Duration? = nil,
        maxResponseSize: Int = 1 << 20
    ) async throws(OAuth2Error) -> AuthorizationServerMetadata {
        do throws(OAuth2Error) {
            return try await fetch(
                issuer: issuer, document: .openIDConfiguration, issuerRule: issuerRule, transport: transport,
                timeout: timeout, maxResponseSize: maxResponseSize
            )
        } catch  where error.httpStatus == 404 {
            return try await fetch(
                issuer: issuer, document: .oauthAuthorizationServer, issuerRule: issuerRule, transport: transport,
                timeout: timeout, maxResponseSize: maxResponseSize
            )
        }
    }
}

/// Discovered metadata, kept for a while so that an app asks the provider
/// once an hour rather than on every sign-in.
///
/// One per app (or per provider); thread-safe. A failed discovery is not
/// cached: the next call tries again.
public final class MetadataCache: Sendable {
    /// The transport discovery goes through.
    public let transport: any HTTPTransport
    /// How long a document is used before it is fetched again.
    public let maxAge: Duration
    private let clock: any OAuth2Clock
    private let entries = LockedValue<[String: Entry]>([:])

    private struct Entry: Sendable {
        var metadata: AuthorizationServerMetadata
        var fetchedAt: Date
    }

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - transport: typically the app's one ``CurlTransport``.
    ///   - maxAge: how long a document is kept; an hour by default.
    ///   - clock: where the age is read from.
    public init(transport: any HTTPTransport, maxAge: Duration = .seconds(3600), clock: any OAuth2Clock = SystemClock()) {
        self.transport = transport
        self.maxAge = maxAge
        self.clock = clock
    }

    /// The issuer's metadata, from the cache while it is younger than ``maxAge``:
    /// its OpenID Connect configuration (`<issuer>/.well-known/openid-configuration`),
    /// or, when the issuer has none (HTTP 404), its RFC 8414 metadata
    /// (`/.well-known/oauth-authorization-server` inserted before the issuer's path).
    ///
    /// For an app that needs the metadata itself, to mix it with settings of
    /// its own; ``OAuth2Configuration/discover(issuer:clientID:clientSecret:transport:cache:clientCertificate:issuerRule:)``
    /// makes a configuration in one call. The answer must name exactly
    /// `issuer` (RFC 8414 §3.3, OpenID Connect Discovery §4.3) and its
    /// endpoints must be `https` (or loopback `http`). Redirects are not
    /// followed: metadata served from elsewhere is not the issuer's. Any
    /// failure of the first request but a 404 is thrown as it is: a provider
    /// that is down is not taken for one without OpenID Connect.
    ///
    /// - Parameters:
    ///   - issuer: the issuer identifier, an absolute `https` URL (or loopback `http`)
    ///     without query or fragment.
    ///   - issuerRule: ``IssuerRule/exact`` (the default), or a template rule to
    ///     accept a document that names a template of `issuer` (Microsoft Entra
    ///     ID's `common`, `organizations` and `consumers`): its issuer is then the template.
    ///     A cached document is used only for a rule that accepts it.
    ///   - timeout: the longest each request may take; the transport's default when `nil`.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` or `insecure_endpoint`
    ///   for an unusable issuer; `issuer_mismatch`; `unexpected_redirect`,
    ///   `http_error`, `invalid_token_response` and the other codes of a bad
    ///   answer; `timeout`, `tls_error`, `transport_error` when no answer came.
    public func metadata(
        issuer: String, issuerRule: IssuerRule = .exact, timeout: Duration? = nil
    ) async throws(OAuth2Error) -> AuthorizationServerMetadata {
        let now = clock.now()
        if let entry = entries.withLock({ $0[issuer] }), now.timeIntervalSince(entry.fetchedAt) < maxAge.timeInterval,
            now >= entry.fetchedAt, issuerRule.acceptsMetadataIssuer(entry.metadata.issuer, requested: issuer)
        {
            return entry.metadata
        }
        let metadata = try await AuthorizationServerMetadata.discover(
            issuer: issuer, issuerRule: issuerRule, transport: transport, timeout: timeout)
        entries.withLock { $0[issuer] = Entry(metadata: metadata, fetchedAt: clock.now()) }
        return metadata
    }

    /// Forgets every document, so the next call fetches again.
    public func removeAll() {
        entries.withLock { $0.removeAll() }
    }
}
