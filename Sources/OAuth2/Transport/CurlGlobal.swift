#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl

/// libcurl's process-wide initialisation, done once.
///
/// `curl_global_init` is not thread-safe on every build of libcurl; a static
/// `let` is initialised exactly once, under the runtime's own lock, before any
/// transport creates a handle.
enum CurlGlobal {
    /// `nil` when libcurl initialised, else why it did not.
    static let initializationError: HTTPTransportError? = {
        let code = ccurl_global_init()
        guard code == CURLE_OK else {
            return .other("libcurl could not be initialised: \(String(cString: curl_easy_strerror(code)))")
        }
        return nil
    }()
}
