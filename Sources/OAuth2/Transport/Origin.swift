#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// A URL's origin (RFC 6454): scheme, host and port, with default ports filled in.
package struct Origin: Equatable {
    package let scheme: String
    package let host: String
    package let port: Int

    package init(_ url: URL) {
        scheme = url.scheme?.lowercased() ?? ""
        host = url.host?.lowercased() ?? ""
        port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
    }
}
