#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CurlTransport {
    /// The most redirects a request that follows them takes.
    static let maxRedirects = 10

    /// Sends `request` and each redirect's request in turn (``RedirectStep``:
    /// `http` and `https` only, never from `https` to `http`, the request's
    /// fields and body only to its own origin), all within the request's one timeout.
    func sendFollowingRedirects(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        let clock = ContinuousClock()
        let timeout = Duration.milliseconds((request.timeout ?? configuration.timeout).curlMilliseconds)
        let deadline = clock.now.advanced(by: timeout)
        var current = request
        current.redirects = .never
        for _ in 0...Self.maxRedirects {
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw HTTPTransportError.timeout.with(message: "timed out following redirects from \(request.url.redactingQuery)")
            }
            current.timeout = remaining
            let response = try await send(current)
            switch RedirectStep.next(after: response, of: current, original: request) {
            case .stop:
                return response
            case .refuse(let reason):
                throw HTTPTransportError.unsupportedURL.with(message: "the request was \(reason)")
            case .follow(let next, _):
                current = next
            }
        }
        throw HTTPTransportError.tooManyRedirects.with(
            message: "more than \(Self.maxRedirects) redirects from \(request.method) \(request.url.redactingQuery)")
    }
}
