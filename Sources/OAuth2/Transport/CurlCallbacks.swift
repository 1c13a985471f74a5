#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

package import CCurl

// libcurl's write and header callbacks. Both run on the engine thread, inside
// curl_multi_perform, with the unretained address of the transfer as user data:
// the engine keeps the transfer alive for as long as its easy handle is in the
// multi handle, and resets the handle before letting go of it.

// Neither callback retains the transfer for the call (`_withUnsafeGuaranteedRef`):
// the engine holds it for as long as libcurl has it, and a retain and a
// release for every header line and body chunk made about a tenth of the
// transport's reference counting per request.

/// Appends body bytes, refusing (and so aborting the transfer) past the size limit.
let curlWriteCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    return Unmanaged<CurlTransfer>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.receiveBody(data, length: size &* count) }
}

/// Collects the header fields of the last response; a status line starts a new response.
package let curlHeaderCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    return Unmanaged<CurlTransfer>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.receiveHeader(data, length: size &* count) }
}

extension CurlTransfer {
    /// The most body bytes reserved at once for what a response's
    /// `Content-Length` announces (1 MiB, the default size limit).
    static let maxReservation = 1 << 20

    /// What ``curlWriteCallback`` does: `length` if taken, 0 to refuse.
    func receiveBody(_ data: UnsafeMutablePointer<CChar>?, length: Int) -> Int {
        guard length > 0, let data else { return length }
        guard length <= maxResponseSize &- responseBody.count else {
            exceededLimit = true
            return 0
        }
        if responseBody.isEmpty, let easy {
            var announced: curl_off_t = -1
            if ccurl_easy_getinfo_off_t(easy.handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) == CURLE_OK,
                announced > length, announced <= maxResponseSize
            {
                // The server's word only, so at most `maxReservation`: under a
                // raised limit, an announced 2^62 bytes made `Data` trap when
                // the allocation failed. A longer body grows as it arrives.
                responseBody.reserveCapacity(Int(Swift.min(announced, curl_off_t(Self.maxReservation))))
            }
        }
        data.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
            responseBody.append(bytes, count: length)
        }
        return length
    }

    /// What ``curlHeaderCallback`` does: `length` if taken, 0 to refuse.
    func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, length: Int) -> Int {
        guard length > 0, let data else { return length }
        headerBytes &+= length
        guard headerBytes <= Self.maxHeaderBytes else {
            exceededLimit = true
            return 0
        }
        guard receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length)) else {
            exceededLimit = true
            return 0
        }
        return length
    }

    /// Takes one header line as libcurl delivers it (CRLF included).
    ///
    /// The line is kept as bytes (``ResponseHeaderLines``) and made into a
    /// field only when the response's headers are read, on the reader's
    /// thread; here only the fields the transfer itself needs are looked at
    /// (``ResponseFacts``). A status line is taken as one only where one
    /// belongs (``HeaderPhase``): first, and after an interim (1xx)
    /// response's header block, where it clears what came before, so only
    /// the final response's lines remain. Returns `false` to refuse the
    /// response: its `Content-Length` is over the limit.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        guard let base = line.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
        var end = line.count
        while end > 0, base[end - 1] == UInt8(ascii: "\r") || base[end - 1] == UInt8(ascii: "\n") {
            end -= 1
        }
        guard end > 0 else {
            switch headerPhase {
            case .fields:
                flushPendingHeader()
                headerPhase = (100..<200).contains(responseStatus) ? .statusLine : .trailers
                return !announcesBodyOverLimit()
            case .statusLine, .trailers:
                return true
            }
        }
        let bytes = UnsafeBufferPointer(start: base, count: end)
        // libcurl splits lines at LF only, so a bare CR (or a NUL) can sit inside
        // a line; passed on in a value, it could split the field for whoever
        // forwards it. RFC 9110 §5.5: replace each with SP. Looked for with
        // memchr: a closure per byte took 8 instructions a byte, 1,100 of the
        // 16,000 the transport's Swift code ran per request (callgrind).
        guard memchr(base, 0x0D, end) != nil || memchr(base, 0, end) != nil else {
            receiveHeaderContent(bytes)
            return true
        }
        let cleaned = bytes.map { $0 == UInt8(ascii: "\r") || $0 == 0 ? UInt8(ascii: " ") : $0 }
        cleaned.withUnsafeBufferPointer { receiveHeaderContent($0) }
        return true
    }

    /// A header line without its line ending and without CR or NUL: a status line, a folded continuation or a field.
    private func receiveHeaderContent(_ bytes: UnsafeBufferPointer<UInt8>) {
        switch headerPhase {
        case .fields:
            break
        case .trailers:
            // A trailer of a chunked body: neither a field of the response
            // (RFC 9110 §6.5.1) nor, whatever it starts with, a new response.
            return
        case .statusLine:
            headerPhase = .fields
            // A line starting `HTTP/` anywhere else is a malformed field: as a
            // status line there, it wiped the fields and the body read so far.
            guard bytes.count >= 5, bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"), bytes[2] == UInt8(ascii: "T"),
                bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/")
            else { break }
            pendingFact = nil
            responseHeaderLines.bytes.removeAll(keepingCapacity: true)
            responseFacts = ResponseFacts()
            responseBody = Data()
            responseStatus = Self.statusCode(inStatusLine: bytes)
            responseIsHTTP1 = bytes.count >= 7 && bytes[5] == UInt8(ascii: "1") && bytes[6] == UInt8(ascii: ".")
            return
        }
        responseHeaderLines.append(bytes)
        if ResponseHeaderLines.isContinuation(bytes) {
            // Obsolete line folding (RFC 9112 §5.2): the line continues the previous value.
            if let pending = pendingFact, let value = ResponseHeaderLines.value(pending.value, continuedBy: bytes) {
                pendingFact = (pending.field, value)
            }
            return
        }
        flushPendingHeader()
        guard let start = bytes.baseAddress, let found = memchr(start, Int32(UInt8(ascii: ":")), bytes.count),
            case let colon = UnsafeRawPointer(found) - UnsafeRawPointer(start), colon > 0,
            let field = ResponseFacts.Field(name: UnsafeBufferPointer(rebasing: bytes[0..<colon]))
        else { return }
        pendingFact = (field, ResponseHeaderLines.trimmedString(UnsafeBufferPointer(rebasing: bytes[(colon + 1)...])))
    }

    /// Whether the headers just completed announce a body larger than the limit.
    ///
    /// Checked at the end of the headers, so the body is refused before any of
    /// it is read. Responses without a body of their own are exempt: HEAD,
    /// 1xx, 204, 304.
    private func announcesBodyOverLimit() -> Bool {
        switch responseStatus {
        case 100..<200, 204, 304: return false
        default: break
        }
        guard method != .head, let announced = responseFacts.announcedLength else {
            return false
        }
        return announced > maxResponseSize
    }

    /// The three-digit code of a status line (`HTTP/1.1 200 OK`, `HTTP/2 404`), or 0.
    private static func statusCode(inStatusLine line: UnsafeBufferPointer<UInt8>) -> Int {
        guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return 0 }
        var code = 0
        var digits = 0
        for byte in line[(space + 1)...] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 3 else { break }
            code = code * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return digits == 3 ? code : 0
    }

    /// Notes the field being read, now that no continuation line can follow.
    package func flushPendingHeader() {
        if let pending = pendingFact {
            responseFacts.note(pending.field, value: pending.value)
            pendingFact = nil
        }
    }
}
