#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Error {
    /// Sends a request, translating transport failures into ``OAuth2Error``.
    @inline(__always) // One async frame fewer per signed request (BENCHMARKS.md, issue 15, eighth pass).
    static func performing(_ request: HTTPTransportRequest, on transport: any HTTPTransport) async throws(OAuth2Error)
        -> HTTPTransportResponse
    {
        do {
            return try await transport.send(request)
        } catch let error as HTTPTransportError {
            throw OAuth2Error(transportError: error)
        } catch let error as OAuth2Error {
            throw error
        } catch is CancellationError {
            throw OAuth2Error(code: .cancelled, message: "the request was cancelled")
        } catch {
            throw OAuth2Error(code: .transportError, message: "the request failed: \(type(of: error))")
        }
    }

    /// The error a transport failure becomes: `timeout`, `tls_error`,
    /// `response_too_large`, `cancelled` or `transport_error`.
    init(transportError error: HTTPTransportError) {
        let code: Code
        switch error.kind {
        case .timeout: code = .timeout
        case .tlsFailed: code = .tlsError
        case .responseTooLarge: code = .responseTooLarge
        case .cancelled: code = .cancelled
        case .connectFailed, .shutDown, .unsupportedURL, .invalidRequest, .connectionLost, .tooManyRedirects, .other:
            code = .transportError
        }
        self.init(code: code, message: error.message)
    }
}
