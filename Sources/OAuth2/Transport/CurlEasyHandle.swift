import CCurl

/// A libcurl easy handle with its error buffer, reused from transfer to transfer.
///
/// Belongs to the engine thread: created, configured, reset and cleaned up there only.
final class CurlEasyHandle {
    let handle: UnsafeMutableRawPointer
    /// libcurl writes a failure's detail here (CURLOPT_ERRORBUFFER); it must outlive the handle's use.
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Creates a handle, or `nil` when libcurl cannot allocate one.
    init?() {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Forgets the last transfer's options and pointers; libcurl keeps the connection cache.
    func reset() {
        curl_easy_reset(handle)
    }

    /// libcurl's detail on the last failure: its error buffer, else its text for the code.
    func message(for code: CURLcode) -> String {
        if errorBuffer.pointee != 0 {
            return String(cString: errorBuffer)
        }
        return String(cString: curl_easy_strerror(code))
    }

    /// Sets every option for `transfer`, whose unretained address the callbacks receive.
    ///
    /// The handle must be fresh or reset. Returns the first failing option's code.
    func configure(
        for transfer: CurlTransfer,
        context: UnsafeMutableRawPointer,
        configuration: CurlTransport.Configuration
    ) -> CURLcode {
        errorBuffer.pointee = 0
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

        set(CURLOPT_URL, string: transfer.urlString)
        set(CURLOPT_PROTOCOLS_STR, string: "http,https")
        set(CURLOPT_REDIR_PROTOCOLS_STR, string: "http,https")
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = configuration.caFile {
            set(CURLOPT_CAINFO, string: caFile)
        }
        set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        if transfer.url.scheme?.lowercased() == "https" {
            // Wait for a connection that may multiplex (HTTP/2) rather than open another.
            set(CURLOPT_PIPEWAIT, 1)
        }
        set(CURLOPT_TIMEOUT_MS, transfer.timeoutMilliseconds)
        set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
        set(CURLOPT_FOLLOWLOCATION, transfer.followRedirects ? 1 : 0)
        if transfer.followRedirects {
            set(CURLOPT_MAXREDIRS, 10)
        }
        switch transfer.method {
        case .get:
            set(CURLOPT_HTTPGET, 1)
        case .head:
            set(CURLOPT_NOBODY, 1)
        case .post:
            setBody(of: transfer, code: &code)
        case .custom(let method):
            set(CURLOPT_CUSTOMREQUEST, string: method)
            if transfer.bodyStorage != nil {
                setBody(of: transfer, code: &code)
            }
        }
        if code == CURLE_OK {
            code = ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, transfer.headerList)
        }

        set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        set(CURLOPT_PRIVATE, pointer: context)
        set(CURLOPT_WRITEDATA, pointer: context)
        set(CURLOPT_HEADERDATA, pointer: context)
        if code == CURLE_OK {
            code = ccurl_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        }
        if code == CURLE_OK {
            code = ccurl_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        }
        return code
    }

    private func setBody(of transfer: CurlTransfer, code: inout CURLcode) {
        guard code == CURLE_OK else { return }
        code = ccurl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(transfer.bodyCount))
        guard code == CURLE_OK else { return }
        code = ccurl_easy_setopt_pointer(handle, CURLOPT_POSTFIELDS, transfer.bodyStorage)
    }
}
