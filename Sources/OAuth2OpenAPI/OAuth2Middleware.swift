public import HTTPTypes
public import OAuth2
public import OpenAPIRuntime

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A swift-openapi-runtime `ClientMiddleware` that signs a generated
/// client's requests with tokens from a ``/OAuth2/TokenSource`` (an
/// ``/OAuth2/OAuth2Client``, say), the way ``/OAuth2/OAuth2Client/send(_:)`` does:
/// it hands each request to a ``/OAuth2/SigningTransport``, so the rules are
/// the framework's, written once:
///
/// - a token refreshed before it expires (the source's job);
/// - on a 401 with `invalid_token` (or without a challenge), one refresh and
///   one retry; a second 401 throws `invalid_token` and the source drops the
///   token; a 401 or 403 naming `insufficient_scope` throws
///   `insufficient_scope` and is not retried; a 429 throws `rate_limited`;
/// - a token only over `https`, or `http` to a loopback host (`insecure_endpoint`);
/// - a DPoP-bound token (RFC 9449) as `Authorization: DPoP` with a `DPoP`
///   proof made for the request's own method and URL, a nonce the server
///   asks for (`use_dpop_nonce`) sent once (`dpop_nonce_loop` if it asks
///   again), and a bearer token answered with a challenge for DPoP only
///   throws `dpop_required`. The nonces each origin gave are kept by the
///   middleware (by the provider, when the source is an ``/OAuth2/OAuth2Client``),
///   so later requests carry them from the start.
///
/// A 401 counts only from the hop that carried the token. A generated
/// client's response does not say which URL answered, and a transport that
/// follows redirects on its own (AsyncHTTPClient's and URLSession's do by
/// default) may hand back the 401 of another origin that a redirect led to,
/// which never saw the token: refreshing for it would spend a rotating
/// refresh token, and a second one would drop the grant. So:
/// - over an ``HTTPTransportClientTransport``, which returns redirects and says which
///   URL answered, a 401 counts when it came from the token's origin;
/// - over any other transport, a 401 is returned as it is, without refresh
///   or retry, unless the middleware is told the transport returns redirects
///   instead of following them (`nextHopFollowsRedirects: false`, for
///   AsyncHTTPClient with `redirectConfiguration: .disallow`, say).
///
/// A DPoP proof names one URL: a transport that follows a redirect on its
/// own would send it to another, where it is refused. Over an
/// ``HTTPTransportClientTransport`` (whose ``/OAuth2/CurlTransport`` returns
/// redirects) the generated client gets the 3xx, and its next request gets
/// a proof of its own.
///
/// The token goes only to the origins (scheme, host and port) the
/// middleware was made for: a request whose server URL is on another origin
/// is passed on untouched, without a token. A request that already has an
/// `Authorization` field is passed on untouched too: the caller chose its
/// credentials, and they are neither replaced nor retried.
///
/// A retry sends the request body again. A body that can be read many
/// times (`iterationBehavior` `.multiple`, as generated clients make for
/// JSON) is simply read again; one that can be read once (`.single`, a
/// stream) is buffered first, at most ``maxBufferedBodySize`` bytes, and a
/// larger one is refused before anything is sent (`invalid_configuration`).
///
/// Errors reach the generated client's caller as the `underlyingError` of
/// its `ClientError`: an ``/OAuth2/OAuth2Error`` from signing, or what the
/// next middleware or the transport threw, as it threw it.
///
/// ```swift
/// let serverURL = try Servers.Server1.url()
/// let client = Client(
///     serverURL: serverURL,
///     transport: HTTPTransportClientTransport(transport),
///     middlewares: [OAuth2Middleware(tokenSource: provider.client(account: userID), serverURL: serverURL)]
/// )
/// ```
public struct OAuth2Middleware: ClientMiddleware {
    /// Where tokens come from.
    public let tokenSource: any TokenSource
    /// The largest `.single` request body buffered so it can be sent again
    /// after a refresh, in bytes (1 MiB by default).
    public var maxBufferedBodySize: Int
    /// Whether the transport after the middleware may follow redirects on
    /// its own; `true` by default. Irrelevant over an ``HTTPTransportClientTransport``,
    /// which says which URL answered. See the type's discussion.
    public var nextHopFollowsRedirects: Bool
    private let origins: [Origin]
    /// The DPoP nonces resource servers gave, per origin: kept across
    /// requests, which each get a signing transport of their own.
    private let dpopNonces: DPoPNonceCache

    /// Signs requests to `serverURL`'s origin (the one the generated client is made with).
    public init(
        tokenSource: any TokenSource, serverURL: URL, maxBufferedBodySize: Int = 1 << 20, nextHopFollowsRedirects: Bool = true
    ) {
        self.init(
            tokenSource: tokenSource, allowedOrigins: [serverURL], maxBufferedBodySize: maxBufferedBodySize,
            nextHopFollowsRedirects: nextHopFollowsRedirects)
    }

    /// Signs requests to the origins of `allowedOrigins` (only their scheme,
    /// host and port count); requests to any other go unsigned.
    public init(
        tokenSource: any TokenSource, allowedOrigins: [URL], maxBufferedBodySize: Int = 1 << 20, nextHopFollowsRedirects: Bool = true
    ) {
        self.tokenSource = tokenSource
        self.origins = allowedOrigins.map(Origin.init)
        self.dpopNonces = SigningTransport.nonceCache(for: tokenSource)
        self.maxBufferedBodySize = maxBufferedBodySize
        self.nextHopFollowsRedirects = nextHopFollowsRedirects
    }

    /// Signs `request` when it goes to an allowed origin and has no
    /// `Authorization` of its own, refreshing and retrying once as described above.
    ///
    /// - Throws: ``/OAuth2/OAuth2Error`` as ``/OAuth2/SigningTransport/send(_:)``
    ///   throws it, `invalid_configuration` for a `.single` body over
    ///   ``maxBufferedBodySize``; whatever `next` threw, as it is.
    public func intercept(
        _ request: HTTPTypes.HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPTypes.HTTPRequest, HTTPBody?, URL) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?) {
        guard !request.hasAuthorization,
            let url = OpenAPIRequestURL.make(baseURL: baseURL, path: request.path),
            origins.contains(Origin(url))
        else {
            return try await next(request, body, baseURL)
        }
        let replayable = try await replayable(body, operationID: operationID)
        return try await withoutActuallyEscaping(next) { next in
            let hop = NextHop(
                request: request, body: replayable, baseURL: baseURL, mayFollowRedirects: nextHopFollowsRedirects, next: next)
            do {
                _ = try await SigningTransport(
                    wrapping: hop, tokenSource: tokenSource, telemetry: .global, readyToken: nil, dpopNonces: dpopNonces
                ).send(HTTPTransportRequest(signing: request, url: url))
            } catch {
                throw hop.failure ?? error
            }
            guard let answer = hop.answer else {
                throw OAuth2Error(code: .transportError, message: "the signed request of \(operationID) got no response")
            }
            return answer
        }
    }

    /// A body that can be sent twice: `body` itself unless it can be read only once.
    private func replayable(_ body: HTTPBody?, operationID: String) async throws -> HTTPBody? {
        guard let body, body.iterationBehavior == .single else { return body }
        guard let data = try await body.collected(upTo: maxBufferedBodySize) else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: """
                    the request body of \(operationID) can be read only once and is over the \(maxBufferedBodySize) bytes \
                    buffered to send it again after a refresh: raise maxBufferedBodySize, or give a body that can be read again
                    """
            )
        }
        return HTTPBody(data)
    }
}
