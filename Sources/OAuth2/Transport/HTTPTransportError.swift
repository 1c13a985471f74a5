#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a request sent through an ``HTTPTransport`` did not complete.
///
/// Compare with the static members (`error == .timeout`). The message never
/// includes request headers or bodies.
public struct HTTPTransportError: Error, Sendable, Hashable {
    enum Kind: String, Sendable, Hashable {
        case timeout
        case connectFailed
        case tlsFailed
        case responseTooLarge
        case cancelled
        case shutDown
        case unsupportedURL
        case invalidRequest
        case connectionLost
        case tooManyRedirects
        case internalAddress
        case other
    }

    let kind: Kind
    /// A human-readable explanation, free of secrets.
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The request took longer than its timeout.
    public static let timeout = HTTPTransportError(.timeout, "the request timed out")
    /// No connection could be made (refused, unreachable, DNS failure).
    public static let connectFailed = HTTPTransportError(.connectFailed, "could not connect")
    /// The TLS handshake or certificate verification failed.
    public static let tlsFailed = HTTPTransportError(.tlsFailed, "TLS handshake or certificate verification failed")
    /// The response body was larger than the request's limit.
    public static let responseTooLarge = HTTPTransportError(.responseTooLarge, "the response body exceeded the size limit")
    /// The request was cancelled.
    public static let cancelled = HTTPTransportError(.cancelled, "the request was cancelled")
    /// The transport was shut down before the request completed.
    public static let shutDown = HTTPTransportError(.shutDown, "the transport was shut down")
    /// The URL is not an absolute `http` or `https` URL.
    public static let unsupportedURL = HTTPTransportError(.unsupportedURL, "only absolute http and https URLs are supported")
    /// The request cannot be sent as given (a header with a line break, say).
    public static let invalidRequest = HTTPTransportError(.invalidRequest, "the request is malformed")
    /// The connection closed before a complete response arrived.
    public static let connectionLost = HTTPTransportError(.connectionLost, "the connection was lost before the response was complete")
    /// More redirects than allowed.
    public static let tooManyRedirects = HTTPTransportError(.tooManyRedirects, "too many redirects")
    /// The host resolved to internal addresses only, and the request may
    /// connect only to public ones (``HTTPTransportRequest/connectsOnlyToPublicAddresses``).
    public static let internalAddress = HTTPTransportError(
        .internalAddress, "the host resolves to an internal address, and the request may connect only to public ones")
    /// Any other failure; the message says what.
    public static func other(_ message: String) -> HTTPTransportError {
        HTTPTransportError(.other, message)
    }

    /// The same kind of error with a more specific message.
    public func with(message: String) -> HTTPTransportError {
        HTTPTransportError(kind, message)
    }

    /// Errors are equal when they are of the same kind, whatever their messages.
    public static func == (lhs: HTTPTransportError, rhs: HTTPTransportError) -> Bool {
        lhs.kind == rhs.kind
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
    }
}

extension HTTPTransportError: CustomStringConvertible {
    public var description: String { message }
}
