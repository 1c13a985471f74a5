#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl

extension CurlTransport {
    /// The transport error for a libcurl result code, with libcurl's detail.
    ///
    /// `message` comes from libcurl's error buffer (or its text for the code),
    /// which names hosts and ports at most, never request headers or bodies.
    static func error(for code: CURLcode, message: String) -> HTTPTransportError {
        let base: HTTPTransportError
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            base = .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            base = .connectFailed
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            base = .tlsFailed
        case CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SEND_ERROR, CURLE_HTTP2_STREAM:
            base = .connectionLost
        case CURLE_TOO_MANY_REDIRECTS:
            base = .tooManyRedirects
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            base = .unsupportedURL
        default:
            return .other("libcurl error \(code.rawValue): \(message)")
        }
        return base.with(message: "\(base.message): \(message)")
    }
}
