import Logging
import OAuth2

/// The run's `CurlTransport`, started by its first request.
///
/// Many runs send nothing: `token --print-access-token` or `git-credential
/// get` with a valid stored token, `provider list`, a usage error found after
/// parsing. They then skip libcurl's global initialisation (OpenSSL's with
/// it) and the transport's thread (2.4 M instructions), and, since the
/// library opens libcurl with its first transport, loading libcurl at all:
/// for such a run the transport would be most of the process's work.
final class LazyTransport: HTTPTransport, Sendable {
    private enum State: Sendable {
        case idle
        case started(CurlTransport)
        case shutDown
    }

    private let configuration: CurlTransport.Configuration
    private let logger: Logger
    private let state = LockedValue(State.idle)

    init(configuration: CurlTransport.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        try await started().send(request)
    }

    /// Stops the transport if a request started it; later sends throw
    /// `HTTPTransportError.shutDown`, as `CurlTransport`'s do.
    func shutdown() async {
        let transport = state.withLock { state -> CurlTransport? in
            defer { state = .shutDown }
            guard case .started(let transport) = state else { return nil }
            return transport
        }
        await transport?.shutdown()
    }

    private func started() throws -> CurlTransport {
        let transport = state.withLock { state -> CurlTransport? in
            switch state {
            case .idle:
                logger.debug("starting the HTTP transport (libcurl)")
                let transport = CurlTransport(configuration: configuration)
                state = .started(transport)
                return transport
            case .started(let transport):
                return transport
            case .shutDown:
                return nil
            }
        }
        guard let transport else { throw HTTPTransportError.shutDown }
        return transport
    }
}
