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
    func result(for code: CURLcode) -> Result<HTTPResponse, HTTPTransportError> {
        guard let easy else {
            return .failure(.other("the transfer finished without a handle"))
        }
        guard code == CURLE_OK else {
            if exceededLimit {
                return .failure(.responseTooLarge)
            }
            return .failure(CurlTransport.error(for: code, message: easy.message(for: code)))
        }
        flushPendingHeader()
        var status = 0
        _ = ccurl_easy_getinfo_long(easy.handle, CURLINFO_RESPONSE_CODE, &status)
        var responseURL = url
        if followRedirects {
            var effective: UnsafeMutablePointer<CChar>?
            if ccurl_easy_getinfo_string(easy.handle, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK,
                let effective, let parsed = URL(string: String(cString: effective)) {
                responseURL = parsed
            }
        }
        let response = HTTPResponse(status: status, headers: responseHeaders, body: responseBody, url: responseURL)
        responseHeaders = HTTPHeaders()
        responseBody = Data()
        return .success(response)
    }
}
