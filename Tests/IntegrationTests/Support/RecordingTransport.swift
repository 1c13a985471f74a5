import Foundation
import OAuth2

/// Records every request it passes on to a `CurlTransport`, and the status
/// each got: what an app's own transport, or another SDK's, would see.
///
/// Tests count refreshes here rather than at the provider when other suites
/// use the same provider client at the same time.
final class RecordingTransport: HTTPTransport {
    let inner = CurlTransport()
    private let sent = LockedValue<[HTTPTransportRequest]>([])
    private let answered = LockedValue<[(request: HTTPTransportRequest, status: HTTPResponse.Status)]>([])

    var requests: [HTTPTransportRequest] { sent.withLock { $0 } }

    /// The status of every refresh token grant sent through it that was answered, in order.
    var refreshGrants: [HTTPResponse.Status] {
        answered.withLock { exchanges in
            exchanges.filter { exchange in
                let form = exchange.request.body.map { String(decoding: $0, as: UTF8.self) } ?? ""
                return form.split(separator: "&").contains("grant_type=refresh_token")
            }.map(\.status)
        }
    }

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        sent.withLock { $0.append(request) }
        let response = try await inner.send(request)
        answered.withLock { $0.append((request, response.status)) }
        return response
    }
}
