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
        let code = ccurl_global_init()
        guard code == CURLE_OK else {
            return .other("libcurl could not be initialised: \(String(cString: ccurl_easy_strerror(code)))")
        }
        return nil
    }()
}
