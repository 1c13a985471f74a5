import HTTPTypes
import OAuth2
import OpenAPIRuntime

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The rest of a generated client's chain (the next middleware, then the
/// transport) as an ``/OAuth2/HTTPTransport``, so that ``/OAuth2/SigningTransport``
/// can sign, refresh and retry in front of it.
///
/// It sends the generated client's own request, adding only the
/// `Authorization` field the signing transport set, with the original body.
/// It keeps the last answer, body unread, for the middleware to return, and
/// the chain's error as thrown, which the signing transport would otherwise
/// turn into an ``/OAuth2/OAuth2Error``.
final class NextHop: HTTPTransport {
    typealias Next = @Sendable (HTTPTypes.HTTPRequest, HTTPBody?, URL) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?)

    private enum Outcome {
        case answered(HTTPTypes.HTTPResponse, HTTPBody?)
        case failed(any Error)
    }

    private let request: HTTPTypes.HTTPRequest
    private let body: HTTPBody?
    private let baseURL: URL
    private let next: Next
    private let outcome = LockedValue<Outcome?>(nil)

    /// Whether the chain may follow redirects on its own when no transport
    /// says which URL answered (``HopReport``).
    private let mayFollowRedirects: Bool

    init(request: HTTPTypes.HTTPRequest, body: HTTPBody?, baseURL: URL, mayFollowRedirects: Bool, next: @escaping Next) {
        self.request = request
        self.body = body
        self.baseURL = baseURL
        self.mayFollowRedirects = mayFollowRedirects
        self.next = next
    }

    /// The last response and its unread body, if the last attempt got one.
    var answer: (HTTPTypes.HTTPResponse, HTTPBody?)? {
        guard case .answered(let response, let body) = outcome.withLock({ $0 }) else { return nil }
        return (response, body)
    }

    /// What the chain threw, if the last attempt failed.
    var failure: (any Error)? {
        guard case .failed(let error) = outcome.withLock({ $0 }) else { return nil }
        return error
    }

    func send(_ signed: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        // Authorization and the tracer's context, as SigningTransport set them.
        let request = self.request.adding(signed.headers)
        do {
            let report = HopReport(clientCertificate: signed.clientCertificate)
            let (response, responseBody) = try await HopReport.$current.withValue(report) {
                try await next(request, body, baseURL)
            }
            outcome.withLock { $0 = .answered(response, responseBody) }
            var answer = HTTPTransportResponse(response, url: report.url ?? signed.url)
            // No transport said which URL answered: one that followed a
            // redirect may have handed back another origin's 401.
            answer.answeredByUnknownHop = report.url == nil && mayFollowRedirects
            return answer
        } catch {
            outcome.withLock { $0 = .failed(error) }
            throw error
        }
    }
}
