#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl

/// A libcurl easy handle with its error buffer, reused from transfer to transfer.
///
/// Belongs to the engine thread: created, configured and cleaned up there only.
/// A handle waiting in the engine's pool still points at its last transfer's
/// header list, body and context; libcurl reads those only during a transfer,
/// and the next `configure` replaces them.
final class CurlEasyHandle {
    /// The options a transfer sets beyond its URL, headers, body and context.
    ///
    /// A handle configured for a transfer of the same kind keeps them: setting
    /// them again after `curl_easy_reset` cost about 1.7 µs per request.
    struct Kind: Equatable {
        var loopback: Bool
        var https: Bool
        var method: CurlTransfer.Method
        var hasBody: Bool
        var timeoutMilliseconds: Int
        /// Part of the kind so that a handle never carries one transfer's
        /// certificate into another's: libcurl keeps TLS options until reset.
        var clientCertificate: ClientCertificate?
        var addressRule: CurlTransfer.AddressRule
    }

    let handle: UnsafeMutableRawPointer
    /// libcurl writes a failure's detail here (CURLOPT_ERRORBUFFER); it must outlive the handle's use.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    // The driver's only; `@exclusivity(unchecked)` for the reasons given beside CurlEngine's state.

    /// What the handle is configured for; `nil` when fresh or when it must be reset before reuse.
    @exclusivity(unchecked) private var kind: Kind?
    /// Whether no transfer has been configured on the handle yet (no reset needed).
    @exclusivity(unchecked) private var isFresh = true
    /// The URL set on the handle, kept by libcurl until the handle is reset;
    /// `nil` when none or unknown. A client sends to a few URLs again and
    /// again: setting the same one again would copy it twice for nothing.
    @exclusivity(unchecked) private var url: String?

    /// Creates a handle, or `nil` when libcurl cannot allocate one.
    init?() {
        guard let handle = ccurl_easy_init() else { return nil }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        ccurl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// libcurl's detail on the last failure: its error buffer, else its text for the code.
    func message(for code: CURLcode) -> String {
        if errorBuffer.pointee != 0 {
            return String(cString: errorBuffer)
        }
        return String(cString: ccurl_easy_strerror(code))
    }

    /// Sets the options for `transfer`, whose unretained address the callbacks receive.
    ///
    /// Sets only the URL, headers, body and context when the handle's last
    /// transfer was of the same kind; otherwise resets the handle and sets
    /// everything. Returns the first failing option's code.
    func configure(
        for transfer: CurlTransfer,
        context: UnsafeMutableRawPointer,
        configuration: CurlTransport.Configuration
    ) -> CURLcode {
        errorBuffer.pointee = 0
        let kind = Kind(
            loopback: transfer.isLoopbackHost,
            https: transfer.isHTTPS,
            method: transfer.method,
            hasBody: transfer.bodyStorage != nil,
            timeoutMilliseconds: transfer.timeoutMilliseconds,
            clientCertificate: transfer.clientCertificate,
            addressRule: transfer.addressRule
        )
        if kind == self.kind {
            return configureTransfer(transfer, context: context)
        }
        if !isFresh {
            ccurl_easy_reset(handle)
            url = nil
        }
        isFresh = false
        let code = configureKind(kind, for: transfer, configuration: configuration)
        guard code == CURLE_OK else {
            self.kind = nil
            return code
        }
        self.kind = kind
        return configureTransfer(transfer, context: context)
    }

    /// Gives the configured transfer a shorter timeout than its request's:
    /// what is left of it after the engine held the transfer back. The handle
    /// is reset before its next transfer.
    func shortenTimeout(toMilliseconds milliseconds: Int) -> CURLcode {
        kind = nil
        return ccurl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, milliseconds)
    }

    /// The options every transfer of `kind` shares, on a fresh or reset handle.
    private func configureKind(
        _ kind: Kind,
        for transfer: CurlTransfer,
        configuration: CurlTransport.Configuration
    ) -> CURLcode {
        var code = CURLE_OK
        func set(_ option: CURLoption, _ value: Int) {
            if code == CURLE_OK { code = ccurl_easy_setopt_long(handle, option, value) }
        }
        func set(_ option: CURLoption, string value: String) {
            // libcurl copies string options (except POSTFIELDS, which is set as a pointer).
            if code == CURLE_OK { code = ccurl_easy_setopt_string(handle, option, value) }
        }
        func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) {
            if code == CURLE_OK { code = ccurl_easy_setopt_pointer(handle, option, value) }
        }

        switch kind.addressRule {
        case .any:
            break
        case .publicOnly:
            // A connection of its own, checked as it opens (its context is
            // set with the transfer's): one made for another request may be
            // to an internal address, and none made for this one is shared.
            set(CURLOPT_PROXY, string: "")
            set(CURLOPT_FRESH_CONNECT, 1)
            set(CURLOPT_FORBID_REUSE, 1)
        case .publicOnlyThroughProxy:
            // Every host through the proxy, which resolves it: no_proxy
            // would otherwise send some directly, unchecked.
            set(CURLOPT_NOPROXY, string: "")
        }
        if code == CURLE_OK {
            code = ccurl_easy_setopt_opensocket_callback(handle, curlOpenSocketCallback)
        }
        if kind.loopback {
            // An empty proxy overrides http_proxy and friends: a loopback
            // request sent to a proxy would reach some other machine's 127.0.0.1.
            set(CURLOPT_PROXY, string: "")
            // The same said for libcurl's other reading of the environment:
            // without a no-proxy list of its own it looks up no_proxy and
            // NO_PROXY on every transfer, two scans of the environment
            // (about 600 instructions a request, counted with callgrind).
            set(CURLOPT_NOPROXY, string: "*")
        } else {
            // A proxy's answer to CONNECT stays out of the header callback,
            // which takes only the first status line, and one after an
            // interim (1xx) response, as a response's start.
            set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        }
        if code == CURLE_OK {
            code = ccurl_easy_allow_only_http(handle, configuration.assumedLibcurlVersion ?? CurlGlobal.versionNumber)
        }
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = configuration.caFile {
            set(CURLOPT_CAINFO, string: caFile)
        }
        if let certificate = kind.clientCertificate, code == CURLE_OK {
            code = setClientCertificate(certificate)
        }
        set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        if kind.https {
            // Wait for a connection that may multiplex (HTTP/2) rather than open another.
            set(CURLOPT_PIPEWAIT, 1)
        }
        set(CURLOPT_TIMEOUT_MS, transfer.timeoutMilliseconds)
        set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
        // libcurl never follows a redirect (CURLOPT_FOLLOWLOCATION stays 0):
        // CurlTransport follows by hand, with RedirectStep's rules.
        switch kind.method {
        case .get:
            set(CURLOPT_HTTPGET, 1)
        case .head:
            set(CURLOPT_NOBODY, 1)
        case .post:
            break
        case .custom(let method):
            set(CURLOPT_CUSTOMREQUEST, string: method)
        }
        set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        if code == CURLE_OK {
            code = ccurl_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        }
        if code == CURLE_OK {
            code = ccurl_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        }
        return code
    }

    /// The certificate and key, as bytes (CURLOPT_SSLCERT_BLOB, libcurl 7.71
    /// or later, which copies them): never a path, which could lead to
    /// another file by the time libcurl opened it.
    ///
    /// libcurl keys its connection cache and its TLS session cache by the
    /// TLS options, the certificate blob among them (`Curl_ssl_config_matches`):
    /// a connection or session made with another certificate, or none, is
    /// not reused for this transfer, nor one made with it for another
    /// (ClientCertificateTests prove it against nginx).
    private func setClientCertificate(_ certificate: ClientCertificate) -> CURLcode {
        func setBlob(_ option: CURLoption, _ bytes: [UInt8]) -> CURLcode {
            var bytes = bytes
            return bytes.withUnsafeMutableBytes { buffer in
                var blob = curl_blob(data: buffer.baseAddress, len: buffer.count, flags: UInt32(CURL_BLOB_COPY))
                return withUnsafeMutablePointer(to: &blob) { ccurl_easy_setopt_pointer(handle, option, $0) }
            }
        }
        var code = setBlob(CURLOPT_SSLCERT_BLOB, certificate.certificatePEM)
        if code == CURLE_OK { code = ccurl_easy_setopt_string(handle, CURLOPT_SSLCERTTYPE, "PEM") }
        if code == CURLE_OK { code = setBlob(CURLOPT_SSLKEY_BLOB, certificate.privateKeyPEM) }
        if code == CURLE_OK { code = ccurl_easy_setopt_string(handle, CURLOPT_SSLKEYTYPE, "PEM") }
        if code == CURLE_OK, let password = certificate.keyPassword {
            code = ccurl_easy_setopt_string(handle, CURLOPT_KEYPASSWD, password.value)
        }
        return code
    }

    /// What differs from one transfer to the next: URL, body, headers and the callbacks' context.
    private func configureTransfer(_ transfer: CurlTransfer, context: UnsafeMutableRawPointer) -> CURLcode {
        var code = CURLE_OK
        if transfer.urlString != url {
            // libcurl copies the URL string; withCString passes a native or
            // small string without the copy an implicit conversion makes.
            code = transfer.urlString.withCString { ccurl_easy_setopt_string(handle, CURLOPT_URL, $0) }
            url = code == CURLE_OK ? transfer.urlString : nil
        }
        if code == CURLE_OK, let body = transfer.bodyStorage {
            // libcurl reads POSTFIELDS in place (the transfer owns it) and sends exactly this many bytes.
            code = ccurl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(transfer.bodyCount))
            if code == CURLE_OK {
                code = ccurl_easy_setopt_pointer(handle, CURLOPT_POSTFIELDS, body)
            }
        }
        if code == CURLE_OK {
            code = ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, transfer.headerList)
        }
        for option in [CURLOPT_PRIVATE, CURLOPT_WRITEDATA, CURLOPT_HEADERDATA] where code == CURLE_OK {
            code = ccurl_easy_setopt_pointer(handle, option, context)
        }
        // Only a transfer whose addresses are checked gives the socket
        // callback its context; a handle of another kind was reset, so none
        // carries a context of a transfer before it.
        if code == CURLE_OK, transfer.addressRule == .publicOnly {
            code = ccurl_easy_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, context)
        }
        if code != CURLE_OK {
            kind = nil
            url = nil
        }
        return code
    }
}
