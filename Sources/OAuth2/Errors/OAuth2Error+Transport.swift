#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether `error` is a `CancellationError`.
///
/// Asked by the error's dynamic type, not by `is CancellationError`: that
/// cast needs a buffer the size of `CancellationError`, a type whose size is
/// known only at run time, so every async function it is inlined into
/// allocated one from the task on entry, thrown or not (three a signed
/// request, counted with callgrind). A member of `Error`
/// would not do: called on `any Error` its `Self` is `any Error` itself.
func isCancellation(_ error: any Error) -> Bool {
    type(of: error) == CancellationError.self
}

extension OAuth2Error {
    /// Sends a request, translating transport failures into ``OAuth2Error``.
    @inline(__always) // One async frame (a task allocation) fewer per signed request.
    static func performing(_ request: HTTPTransportRequest, on transport: any HTTPTransport) async throws(OAuth2Error)
        -> HTTPTransportResponse
    {
        do {
            return try await transport.send(request)
        } catch let error as HTTPTransportError {
            throw OAuth2Error(transportError: error)
        } catch let error as OAuth2Error {
            throw error
        } catch let error where isCancellation(error) {
            throw OAuth2Error(code: .cancelled, message: "the request was cancelled")
        } catch {
            throw OAuth2Error(code: .transportError, message: "the request failed: \(type(of: error))")
        }
    }

    /// The error a transport failure becomes: `timeout`, `tls_error`,
    /// `response_too_large`, `cancelled`, `insecure_endpoint` (a host that
    /// resolved to an internal address where only public ones may be reached)
    /// or `transport_error`.
    init(transportError error: HTTPTransportError) {
        let code: Code
        switch error.kind {
        case .timeout: code = .timeout
        case .tlsFailed: code = .tlsError
        case .responseTooLarge: code = .responseTooLarge
        case .cancelled: code = .cancelled
        case .internalAddress: code = .insecureEndpoint
        case .connectFailed, .shutDown, .unsupportedURL, .invalidRequest, .connectionLost, .tooManyRedirects, .other:
            code = .transportError
        }
        self.init(code: code, message: error.message)
    }
}
