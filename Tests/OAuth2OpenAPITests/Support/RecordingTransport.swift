import OAuth2

/// Passes requests on to another transport and records each, as the API
/// server would see it (headers, body), for the tests to count and inspect.
final class RecordingTransport: HTTPTransport {
    let inner: any HTTPTransport
    private let sent = LockedValue<[HTTPTransportRequest]>([])

    init(_ inner: any HTTPTransport) {
        self.inner = inner
    }

    var requests: [HTTPTransportRequest] { sent.withLock { $0 } }

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        sent.withLock { $0.append(request) }
        return try await inner.send(request)
    }
}
