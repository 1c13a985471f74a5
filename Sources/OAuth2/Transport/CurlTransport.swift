import CCurl

/// Placeholder: the libcurl transport is being built.
enum CurlVersion {
    static var text: String { String(cString: curl_version()) }
}
