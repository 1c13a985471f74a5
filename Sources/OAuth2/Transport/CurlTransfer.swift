#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl
import Synchronization

/// One request on its way through a ``CurlEngine``: what to send, the
/// caller's continuation, and the response as it arrives.
///
/// Created on the caller's thread, which also does the work that needs no
/// libcurl (validation, the header list, the body copy), so the engine thread
/// only sets options and drives the transfer.
package final class CurlTransfer: @unchecked Sendable {
    // @unchecked: `state` is guarded by the engine's lock; `easy`, `activeIndex`
    // and the response fields are touched only by the engine thread (and handed
    // over through that lock); everything else is immutable after init. The
    // mutable fields are `@exclusivity(unchecked)`, for the reasons given
    // beside CurlEngine's state.

    #if DEBUG
    /// The caller's continuation: checked in debug builds, so the tests catch
    /// a caller resumed twice or never.
    typealias Continuation = CheckedContinuation<HTTPTransportResponse, any Error>

    static func withContinuation(_ body: (Continuation) -> Void) async throws -> HTTPTransportResponse {
        try await withCheckedThrowingContinuation(body)
    }
    #else
    /// The caller's continuation: unchecked in release builds (the checked one
    /// allocates and counts on every request); `State` resumes it exactly once.
    typealias Continuation = UnsafeContinuation<HTTPTransportResponse, any Error>

    static func withContinuation(_ body: (Continuation) -> Void) async throws -> HTTPTransportResponse {
        try await withUnsafeThrowingContinuation(body)
    }
    #endif

    /// Who may still resume the caller. Guarded by the engine's lock.
    enum State {
        /// Built, continuation not registered yet.
        /// → `waiting` (registered), → `cancelledEarly` (the Task was cancelled first),
        /// → `leading` (its caller drives libcurl for it).
        case created
        /// Its caller drives libcurl on its own thread (``CurlEngine/lead(_:afterYield:)``)
        /// and has no continuation. → `completed` (the transfer ended), → `waiting`
        /// (handed to the engine thread, then the continuation attached),
        /// → `finished` (the Task was cancelled; the caller throws `CancellationError`).
        case leading
        /// Ended before its caller registered a continuation: the caller takes
        /// the result itself. → `finished`.
        case completed(Result<HTTPTransportResponse, HTTPTransportError>)
        /// The Task was cancelled before the continuation existed; registering
        /// resumes it with `CancellationError` at once. → `finished`.
        case cancelledEarly
        /// Queued or running; whoever moves it to `finished` resumes the caller.
        /// → `finished` (completion, cancellation or shutdown).
        case waiting(Continuation)
        /// The caller has been resumed (or is being resumed); nothing more to do. Terminal.
        case finished
    }

    /// The result of a `completed` transfer, moved out, the state left
    /// `finished`; `nil` (the state untouched) in any other state. Reading
    /// `.completed(let result)` would copy the response, and overwriting
    /// the state would release the original. Call it holding the engine's lock.
    func takeCompletedResult() -> Result<HTTPTransportResponse, HTTPTransportError>? {
        guard case .completed = state else { return nil }
        var taken = State.finished
        swap(&taken, &state)
        switch consume taken {
        case .completed(let result): return result
        case .created, .leading, .cancelledEarly, .waiting, .finished: return nil
        }
    }

    /// How the method is expressed to libcurl.
    enum Method: Equatable {
        case get
        case head
        case post
        case custom(String)
    }

    @exclusivity(unchecked) var state: State = .created

    /// Who came first, the driver putting the transfer into libcurl
    /// (``claimStart()``) or its Task's cancellation (``claimCancellation()``):
    /// 0 neither yet, 1 the driver, 2 the cancellation.
    ///
    /// The driver decides to start a transfer outside the engine's lock, and a
    /// cancellation may come between that decision and the start. Its caller
    /// is told `CancellationError` at once, so the request must then not go
    /// out: a token POST would spend a code or refresh token the caller
    /// believes unused. An atomic, not the lock: one uncontended
    /// compare-exchange per request, where a lock would be a second one.
    private let startClaim = Atomic<UInt8>(0)

    /// Called by the driver just before it puts the transfer into libcurl:
    /// `false` when its Task was cancelled first, and it must not be sent.
    func claimStart() -> Bool {
        startClaim.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged
    }

    /// Called when the Task is cancelled: from now on the driver does not
    /// start the transfer. One already started stays in flight until the
    /// driver removes it.
    func claimCancellation() {
        _ = startClaim.compareExchange(expected: 0, desired: 2, ordering: .relaxed)
    }

    let url: URL
    package let urlString: String
    let isHTTPS: Bool
    /// Whether the host is a loopback host, which is always reached without a proxy.
    package let isLoopbackHost: Bool
    let method: Method
    /// The header list handed to libcurl; freed in `deinit`, after the easy
    /// handle that pointed at it has left the multi handle (libcurl reads it
    /// only during the transfer).
    let headerList: UnsafeMutablePointer<curl_slist>?
    /// Our own copy of the body (non-nil for every POST), `nil` for none:
    /// libcurl reads POSTFIELDS in place while it sends.
    let bodyStorage: UnsafeMutableRawPointer?
    let bodyCount: Int
    let timeoutMilliseconds: Int
    let maxResponseSize: Int
    /// The certificate the handshake presents, if the server asks for one.
    let clientCertificate: ClientCertificate?
    /// How the addresses it connects to are checked.
    let addressRule: AddressRule

    /// ``HTTPTransportRequest/connectsOnlyToPublicAddresses``, as the handle carries it out.
    enum AddressRule: Equatable {
        /// Any address.
        case any
        /// Public addresses only, checked as each socket is opened
        /// (``curlOpenSocketCallback``); a direct connection of its own.
        case publicOnly
        /// Public addresses only, and the environment names a proxy for the
        /// scheme: through the proxy, whatever `no_proxy` says; the proxy resolves.
        case publicOnlyThroughProxy
    }

    /// The internal address the last connection attempt was refused for (its
    /// text), when ``addressRule`` refused one. Engine thread only.
    @exclusivity(unchecked) var refusedAddress: String?

    // Engine thread only.
    @exclusivity(unchecked) var easy: CurlEasyHandle?
    @exclusivity(unchecked) var activeIndex = -1
    /// Where the request goes: its host's key is made from it when needed.
    private let target: HTTPTarget
    /// The host and port the request goes to ("example.com:443"), lowercased:
    /// the engine counts what it gives libcurl per host against
    /// ``CurlTransport/Configuration/maxConnectionsPerHost``. Made when the
    /// engine first counts the transfer, which it does only once enough
    /// transfers are in libcurl for a host to reach that limit. The driver's.
    var hostKey: String {
        if let madeHostKey { return madeHostKey }
        let key = target.hostKey
        madeHostKey = key
        return key
    }
    @exclusivity(unchecked) private var madeHostKey: String?
    /// Where the header lines of the response being read are.
    enum HeaderPhase {
        /// The next line is a status line: first, and after an interim
        /// (1xx) response's header block. → `fields`.
        case statusLine
        /// In a header block: a line is a field or a continuation, never a
        /// new response, whatever it starts with. → `statusLine` (after a
        /// 1xx), → `trailers` (after the final response's).
        case fields
        /// The final response's header block has ended: a line now is a
        /// trailer of its chunked body. Terminal.
        case trailers
    }

    /// Where the header lines are. The driver's.
    @exclusivity(unchecked) var headerPhase = HeaderPhase.statusLine
    /// The status code of the response being read, from its status line.
    @exclusivity(unchecked) package var responseStatus = 0
    /// Whether the response being read is HTTP/1.x, from its status line.
    @exclusivity(unchecked) var responseIsHTTP1 = false
    /// The header lines of the response being read, parsed by whoever reads its fields.
    @exclusivity(unchecked) var responseHeaderLines = ResponseHeaderLines()
    /// The fields of the response being read, as a reader of the response gets them.
    package var responseHeaders: HTTPFields { responseHeaderLines.fields }
    /// The field being read when it is one that ``ResponseFacts`` notes, kept
    /// back until the next line shows it is not folded onto.
    @exclusivity(unchecked) var pendingFact: (field: ResponseFacts.Field, value: String)?
    @exclusivity(unchecked) var responseBody = Data()
    @exclusivity(unchecked) var headerBytes = 0
    /// What the response being read says of its body, noted as
    /// its fields are added, so that no check at the end of the headers has
    /// to search them (a search builds an index of every field name).
    @exclusivity(unchecked) var responseFacts = ResponseFacts()
    /// Set when a callback refused data for being over a limit.
    @exclusivity(unchecked) package var exceededLimit = false

    /// What the header fields of one response say about its body.
    struct ResponseFacts {
        /// How many `Content-Length` fields, and the value of the first as a number (`nil` when not one).
        var contentLengthCount = 0
        var contentLength: Int?
        /// Whether a `Transfer-Encoding` field names `chunked`.
        var isChunked = false

        /// The announced body length, when exactly one `Content-Length` field gave a number.
        var announcedLength: Int? { contentLengthCount == 1 ? contentLength : nil }

        /// The fields noted: the only ones the transfer reads itself.
        enum Field {
            case contentLength
            case transferEncoding

            /// The field a name spells in any case, if it is one of these.
            init?(name: UnsafeBufferPointer<UInt8>) {
                if name.equalsIgnoringASCIICase("content-length") {
                    self = .contentLength
                } else if name.equalsIgnoringASCIICase("transfer-encoding") {
                    self = .transferEncoding
                } else {
                    return nil
                }
            }
        }

        mutating func note(_ field: Field, value: String) {
            switch field {
            case .contentLength:
                contentLengthCount += 1
                if contentLengthCount == 1 { contentLength = Int(value) }
            case .transferEncoding:
                isChunked = isChunked || value.lowercased().contains("chunked")
            }
        }
    }

    /// The most header bytes accepted over all responses of one request (interim ones included).
    static let maxHeaderBytes = 256 * 1024

    /// Validates and prepares a request. `defaultTimeoutMilliseconds`:
    /// `configuration.timeout` in milliseconds, when the caller has it
    /// converted already.
    ///
    /// - Throws: ``HTTPTransportError/unsupportedURL`` for anything but an
    ///   absolute `http`/`https` URL with a host; ``HTTPTransportError/invalidRequest``
    ///   for a malformed method or header.
    package init(
        request: borrowing HTTPTransportRequest, configuration: borrowing CurlTransport.Configuration,
        defaultTimeoutMilliseconds: Int? = nil
    ) throws(HTTPTransportError) {
        // Read once: `absoluteString` is built on every call.
        var urlString = request.url.absoluteString
        guard let target = HTTPTarget(request.url, text: urlString) else {
            throw .unsupportedURL
        }
        isHTTPS = target.isHTTPS
        isLoopbackHost = target.isLoopback
        guard !urlString.withUTF8({ $0.contains(where: { $0 <= 0x20 || $0 == 0x7F }) }) else {
            throw HTTPTransportError.unsupportedURL.with(message: "the URL contains spaces or control characters")
        }
        // HTTPRequest.Method is a valid token by construction.
        let method: Method
        switch request.method {
        case .get: method = request.body == nil ? .get : .custom("GET")
        case .head:
            guard request.body == nil else {
                throw HTTPTransportError.invalidRequest.with(message: "a HEAD request cannot carry a body")
            }
            method = .head
        case .post: method = .post
        default: method = .custom(request.method.rawValue)
        }
        self.method = method
        headerList = try Self.makeHeaderList(request.headers, hasBody: request.body != nil || method == .post)

        if let data = request.body {
            let storage = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(data.count, 1), alignment: 1)
            data.copyBytes(to: storage.assumingMemoryBound(to: UInt8.self), count: data.count)
            bodyStorage = storage
            bodyCount = data.count
        } else if method == .post {
            // An empty POST still needs a non-NULL POSTFIELDS, or libcurl reads the body from stdin.
            bodyStorage = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
            bodyCount = 0
        } else {
            bodyStorage = nil
            bodyCount = 0
        }

        self.url = request.url
        self.urlString = urlString
        self.target = target
        timeoutMilliseconds = request.timeout?.curlMilliseconds ?? defaultTimeoutMilliseconds ?? configuration.timeout.curlMilliseconds
        maxResponseSize = Swift.max(request.maxResponseSize ?? configuration.maxResponseSize, 0)
        clientCertificate = request.clientCertificate
        // A loopback host is never sent to a proxy: checked, and so refused, here.
        addressRule =
            !request.connectsOnlyToPublicAddresses
            ? .any : !target.isLoopback && Self.environmentNamesProxy(https: target.isHTTPS) ? .publicOnlyThroughProxy : .publicOnly
        // Here, on the caller's thread, not at the first header line on the
        // engine's: the caller frees the lines with the response, and memory
        // that one thread allocates and another frees costs both glibc's
        // arena lock (a futex call per request with 64 callers, before).
        responseHeaderLines.bytes.reserveCapacity(ResponseHeaderLines.typicalByteCount)
    }

    deinit {
        ccurl_slist_free_all(headerList)
        bodyStorage?.deallocate()
    }

    /// The request's header lines for libcurl, with libcurl's own additions switched off.
    private static func makeHeaderList(
        _ headers: HTTPFields,
        hasBody: Bool
    ) throws(HTTPTransportError) -> UnsafeMutablePointer<curl_slist>? {
        var list: UnsafeMutablePointer<curl_slist>?
        var complete = false
        defer { if !complete { ccurl_slist_free_all(list) } }

        func append(_ longer: UnsafeMutablePointer<curl_slist>?) throws(HTTPTransportError) {
            // libcurl copies the line; on allocation failure it returns NULL and keeps the list.
            guard let longer else {
                throw .other("out of memory building the request headers")
            }
            list = longer
        }
        // The line is put together on the stack, in the form libcurl copies
        // (C string): no string is built for it.
        func append(name: String, value: String) throws(HTTPTransportError) {
            var name = name
            var value = value
            // Read once out here: `list` is captured by these functions, and a
            // read inside the closures below would be a run-time exclusivity check.
            let shorter = list
            let longer = name.withUTF8 { name in
                value.withUTF8 { value in
                    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: name.count + value.count + 3) { line in
                        var end = line.initialize(fromContentsOf: name)
                        if value.isEmpty {
                            // "Name;" is libcurl's spelling of a header with an empty value ("Name:" would remove it).
                            line[end] = UInt8(ascii: ";")
                            end += 1
                        } else {
                            line[end] = UInt8(ascii: ":")
                            line[end + 1] = UInt8(ascii: " ")
                            end = line[(end + 2)...].initialize(fromContentsOf: value)
                        }
                        line[end] = 0
                        return line.withMemoryRebound(to: CChar.self) { ccurl_slist_append(shorter, $0.baseAddress) }
                    }
                }
            }
            try append(longer)
        }
        func append(_ line: StaticString) throws(HTTPTransportError) {
            try append(ccurl_slist_append(list, UnsafeRawPointer(line.utf8Start).assumingMemoryBound(to: CChar.self)))
        }

        var hasAccept = false
        var hasExpect = false
        var hasContentType = false
        for field in headers {
            // No field can break the header block: HTTPField.Name is an HTTP
            // token by construction, and every HTTPField value has its CR, LF
            // and NUL made spaces (RequestTests checks both).
            if field.name == .contentLength {
                // libcurl states the length of the body it sends; a second one would contradict it.
                continue
            }
            if field.name == .transferEncoding {
                throw HTTPTransportError.invalidRequest.with(message: "Transfer-Encoding cannot be set: bodies are sent whole")
            }
            hasAccept = hasAccept || field.name == .accept
            hasExpect = hasExpect || field.name == .expect
            hasContentType = hasContentType || field.name == .contentType
            try append(name: field.name.rawName, value: field.value)
        }
        // libcurl adds headers of its own (Accept: */*, Expect: 100-continue for a
        // large body, a form Content-Type); "Name:" removes one, so a request goes
        // out as the caller built it.
        if !hasAccept { try append("Accept:" as StaticString) }
        if hasBody, !hasExpect { try append("Expect:" as StaticString) }
        if hasBody, !hasContentType { try append("Content-Type:" as StaticString) }
        complete = true
        return list
    }
}

/// The engine's per-host limit (``HostAdmission``) counts transfers by their ``CurlTransfer/hostKey``.
extension CurlTransfer: HostAdmissionRequest {}
