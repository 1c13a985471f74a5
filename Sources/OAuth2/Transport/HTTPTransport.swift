#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sends HTTP requests. The client does all its HTTP through one.
///
/// ``CurlTransport`` is the default. `OAuth2Testing.CannedTransport` answers
/// from a queue for tests. An implementation must be safe to call from many
/// tasks at once, must honour Task cancellation, and must throw
/// ``HTTPTransportError`` (or a `CancellationError`) when a request does not
/// complete. An error description must never include header values.
public protocol HTTPTransport: Sendable {
    /// Sends one request and returns the whole response.
    ///
    /// - Throws: ``HTTPTransportError`` when no response was received.
    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse
}
