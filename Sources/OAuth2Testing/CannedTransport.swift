public import OAuth2

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An ``/OAuth2/HTTPTransport`` that answers from canned responses and records every request.
///
/// The test double for code built on the framework: queue what the "server"
/// answers, run the code, then assert on ``requests``.
///
/// How a request is answered, first match wins:
/// 1. the oldest answer queued for its URL (`for: url`), where URLs match when
///    they are equal without query and fragment
///    (`https://idp.example/token?x=1` matches one queued for `https://idp.example/token`);
/// 2. the oldest answer queued for any URL (`for: nil`, the default);
/// 3. the handler set with ``respond(_:)``, which answers every request it gets
///    and is never used up;
/// 4. otherwise `send` throws ``/OAuth2/HTTPTransportError/other(_:)`` naming the
///    method and the URL without its query.
///
/// Each queued answer is used once. Like ``/OAuth2/CurlTransport``, it refuses a URL
/// that is not `http`/`https` (``/OAuth2/HTTPTransportError/unsupportedURL``), throws
/// ``/OAuth2/HTTPTransportError/responseTooLarge`` for a canned body over the request's
/// ``/OAuth2/HTTPTransportRequest/maxResponseSize`` (else ``defaultMaxResponseSize``), throws
/// `CancellationError` when the Task is already cancelled, and fills in the
/// response's `url` with the request's when the canned response has none.
/// It never follows redirects. Every request that reaches it is recorded,
/// answered or not, except cancelled ones.
public final class CannedTransport: HTTPTransport, Sendable {
    /// A queued answer: a response or an error to throw.
    private enum Answer: Sendable {
        case response(HTTPTransportResponse)
        case failure(any Error)
    }

    private struct State: Sendable {
        var byURL: [String: [Answer]] = [:]
        var anyURL: [Answer] = []
        var handler: (@Sendable (HTTPTransportRequest) async throws -> HTTPTransportResponse)?
        var requests: [HTTPTransportRequest] = []
    }

    private let state = LockedValue(State())

    /// The body size limit applied when a request sets none (1 MiB, as ``/OAuth2/CurlTransport``).
    public let defaultMaxResponseSize: Int

    /// Creates a transport with nothing queued.
    public init(defaultMaxResponseSize: Int = 1 << 20) {
        self.defaultMaxResponseSize = defaultMaxResponseSize
    }

    /// Every request received so far, in order of arrival.
    public var requests: [HTTPTransportRequest] {
        state.withLock { $0.requests }
    }

    /// The requests received so far for `url`, compared without query and fragment.
    public func requests(for url: URL) -> [HTTPTransportRequest] {
        let key = Self.key(url)
        return state.withLock { $0.requests.filter { Self.key($0.url) == key } }
    }

    /// How many queued answers have not been used yet (the handler does not count).
    public var pendingCount: Int {
        state.withLock { state in
            state.anyURL.count + state.byURL.values.reduce(0) { $0 + $1.count }
        }
    }

    /// Queues a response.
    ///
    /// - Parameters:
    ///   - response: what to answer.
    ///   - url: answer only a request for this URL (compared without
    ///     query and fragment), or `nil` to answer the next request for any URL.
    public func enqueue(_ response: HTTPTransportResponse, for url: URL? = nil) {
        add(.response(response), for: url)
    }

    /// Queues a JSON response: `json` as the UTF-8 body, `Content-Type: application/json`
    /// unless `headers` has a `Content-Type` already.
    public func enqueue(json: String, status: HTTPResponse.Status = 200, headers: HTTPFields = [:], for url: URL? = nil) {
        var headers = headers
        if !headers.contains(.contentType) {
            headers.append(HTTPField(name: .contentType, value: "application/json"))
        }
        enqueue(HTTPTransportResponse(status: status, headers: headers, body: Data(json.utf8)), for: url)
    }

    /// Queues an error for `send` to throw, such as ``/OAuth2/HTTPTransportError/timeout``.
    public func enqueue(error: any Error, for url: URL? = nil) {
        add(.failure(error), for: url)
    }

    /// Answers every request that no queued answer matches with `handler`.
    ///
    /// The handler is called outside any lock, concurrently for concurrent
    /// requests, and may suspend (to make many callers wait on one answer, say).
    /// Setting it again replaces it.
    public func respond(_ handler: @escaping @Sendable (HTTPTransportRequest) async throws -> HTTPTransportResponse) {
        state.withLock { $0.handler = handler }
    }

    /// Forgets every queued answer, the handler and the recorded requests.
    public func reset() {
        state.withLock { $0 = State() }
    }

    /// Records `request` and answers it as the type's documentation describes.
    public func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        try Task.checkCancellation()
        let scheme = request.url.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            state.withLock { $0.requests.append(request) }
            throw HTTPTransportError.unsupportedURL
        }
        let key = Self.key(request.url)
        let next: Answer? = state.withLock { state in
            state.requests.append(request)
            if var queue = state.byURL[key], !queue.isEmpty {
                let answer = queue.removeFirst()
                state.byURL[key] = queue.isEmpty ? nil : queue
                return answer
            }
            if !state.anyURL.isEmpty {
                return state.anyURL.removeFirst()
            }
            return nil
        }
        var response: HTTPTransportResponse
        switch next {
        case .response(let canned):
            response = canned
        case .failure(let error):
            throw error
        case nil:
            guard let handler = state.withLock({ $0.handler }) else {
                throw HTTPTransportError.other("CannedTransport: no canned response for \(request.method) \(key)")
            }
            response = try await handler(request)
        }
        guard response.body.count <= request.maxResponseSize ?? defaultMaxResponseSize else {
            throw HTTPTransportError.responseTooLarge
        }
        if response.url == nil {
            response.url = request.url
        }
        return response
    }

    private func add(_ answer: Answer, for url: URL?) {
        state.withLock { state in
            if let url {
                state.byURL[Self.key(url), default: []].append(answer)
            } else {
                state.anyURL.append(answer)
            }
        }
    }

    /// The URL without query and fragment: what answers are matched on.
    private static func key(_ url: URL) -> String {
        var text = url.absoluteString
        if let index = text.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            text = String(text[..<index])
        }
        return text
    }
}
