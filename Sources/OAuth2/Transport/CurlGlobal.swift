#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl

/// libcurl loaded and initialised for the process, once.
///
/// libcurl is opened when the first transport starts (CCurl.h says why), and
/// `curl_global_init` is not thread-safe on every build of libcurl; a static
/// `let` is initialised exactly once, under the runtime's own lock, before any
/// transport creates a handle.
enum CurlGlobal {
    /// `nil` when libcurl loaded and initialised, else why it did not.
    static let initializationError: HTTPTransportError? = {
        guard ccurl_load() == 0 else {
            return .other("libcurl could not be loaded: \(String(cString: ccurl_load_error()))")
        }
        if let error = versionError(number: ccurl_version_number(), text: String(cString: ccurl_version_text())) {
            return error
        }
        let code = ccurl_global_init()
        guard code == CURLE_OK else {
            return .other("libcurl could not be initialised: \(String(cString: ccurl_easy_strerror(code)))")
        }
        return nil
    }()

    /// The loaded libcurl's version in `CURLVERSION_NUM` form (7.88.1 is
    /// `0x075801`); 0 when it could not be loaded.
    static let versionNumber = UInt32(ccurl_version_number())

    /// Why a libcurl of this version cannot serve the transport, or `nil` when it can.
    ///
    /// The loader already refuses a library without a function the transport
    /// calls; this also refuses one that reports an older version, whatever
    /// its distributor backported, with the version needed named.
    static func versionError(number: UInt32, text: String) -> HTTPTransportError? {
        guard number < UInt32(CCURL_MINIMUM_VERSION) else { return nil }
        return .other("libcurl \(text) is too old: libcurl \(CCURL_MINIMUM_VERSION_TEXT) or later is needed")
    }
}
