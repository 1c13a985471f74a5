import Foundation
import OAuth2

/// libcurl's header callback (`curlHeaderCallback`), fed the input's lines
/// (each with its `\n`) as libcurl would, on a transfer with a 1000-byte body limit.
///
/// Checked: no crash; the callback takes a line whole or refuses it (0),
/// and once it refused, the transfer is marked over a limit; every field
/// has a name without `:`, CR, LF or NUL and a value without surrounding
/// spaces, CR, LF or NUL (RFC 9110 §5.5; libcurl splits lines at LF only,
/// so a bare CR or a NUL must be replaced); the status is at most three digits.
enum HeaderLineTarget {
    private static let request = HTTPTransportRequest(url: URL(string: "http://127.0.0.1:8080/resource")!)

    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let transfer = try? CurlTransfer(request: request, configuration: .init(maxResponseSize: 1000)) else {
            violation("a plain GET to a loopback URL is refused")
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var copy = Array(bytes)
        copy.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var start = 0
            while start < buffer.count {
                let end = buffer[start...].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? buffer.count
                let length = end - start
                let taken = (base + start).withMemoryRebound(to: CChar.self, capacity: length) { line in
                    curlHeaderCallback(line, 1, length, context)
                }
                guard taken == length || (taken == 0 && transfer.exceededLimit) else {
                    violation("the header callback took \(taken) of \(length) bytes without refusing the response")
                }
                if taken == 0 { break }
                start = end
            }
        }
        transfer.flushPendingHeader()
        withExtendedLifetime(transfer) {
            check(transfer)
        }
    }

    private static func check(_ transfer: CurlTransfer) {
        // The status only decides which responses are exempt from the
        // Content-Length check; the response's own status is libcurl's.
        // Up to three digits, as libcurl's `%3d` reads them (`HTTP/1.1 050` is 50).
        guard (0...999).contains(transfer.responseStatus) else {
            violation("a status of \(transfer.responseStatus)")
        }
        for field in transfer.responseHeaders {
            guard !field.name.rawName.isEmpty,
                !field.name.rawName.utf8.contains(where: { $0 == UInt8(ascii: ":") || $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else {
                violation("a header name that is empty or holds a colon, a CR, an LF or a NUL")
            }
            guard !field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                violation("a header value with a CR, an LF or a NUL")
            }
            let ends = [field.value.utf8.first, field.value.utf8.last]
            guard !ends.contains(UInt8(ascii: " ")), !ends.contains(UInt8(ascii: "\t")) else {
                violation("a header value with surrounding spaces")
            }
        }
    }
}
