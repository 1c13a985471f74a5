#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl

extension CurlTransfer {
    /// The outcome of a finished transfer, read from libcurl before the handle is reset.
    ///
    /// Engine thread only, while `easy` is still set.
    func result(for code: CURLcode) -> Result<HTTPTransportResponse, HTTPTransportError> {
        guard let easy else {
            return .failure(.other("the transfer finished without a handle"))
        }
        guard code == CURLE_OK else {
            if exceededLimit {
                return .failure(.responseTooLarge)
            }
            if let address = refusedAddress, code == CURLE_COULDNT_CONNECT {
                return .failure(internalAddressError(refused: address))
            }
            return .failure(CurlTransport.error(for: code, message: easy.message(for: code)))
        }
        flushPendingHeader()
        var status = 0
        _ = ccurl_easy_getinfo_long(easy.handle, CURLINFO_RESPONSE_CODE, &status)
        guard !(100..<200).contains(status) else {
            // libcurl reports a connection closed after an interim response
            // (100 Continue, 103 Early Hints) as a transfer done, with that
            // status: the final response never came.
            let lost = HTTPTransportError.connectionLost
            return .failure(
                lost.with(message: "\(lost.message): it ended after an interim response (HTTP \(status)), before the final one"))
        }
        // The lines are parsed when the caller reads the fields, on its own
        // thread. Lines and body are moved into the response, not copied.
        var lines = ResponseHeaderLines()
        swap(&lines, &responseHeaderLines)
        var body = Data()
        swap(&body, &responseBody)
        // Swift 6.3 copies the response into the result here and destroys the
        // original (5 retains and releases), however it is spelled: built whole,
        // consumed, its initializer kept out of line, no default value for a
        // field; so it is built once, here, and moved.
        return .success(
            HTTPTransportResponse(
                status: HTTPResponse.Status(code: min(max(status, 0), 999)), headerLines: lines, body: body, url: url,
                bodyEndedWithConnection: bodyEndsWithConnection(status: status)))
    }

    /// Whether the final response's body had no length of its own, so that
    /// only the end of the connection ended it (RFC 9112 §6.3, the last
    /// rule): HTTP/1.x, a response that has a body, neither `Content-Length`
    /// nor chunked coding. HTTP/2 frames every body.
    private func bodyEndsWithConnection(status: Int) -> Bool {
        guard responseIsHTTP1, method != .head, status >= 200, status != 204, status != 304,
            responseFacts.contentLengthCount == 0
        else { return false }
        return !responseFacts.isChunked
    }
}
