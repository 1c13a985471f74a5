import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a loopback redirect URI asks to listen on: addresses, port and path.
struct LoopbackEndpoint: Sendable {
    /// One address to bind.
    enum Address: Sendable, Equatable, CustomStringConvertible {
        /// An IPv4 address in 127.0.0.0/8, in host byte order.
        case ipv4(UInt32)
        /// ::1.
        case ipv6Loopback

        var description: String {
            switch self {
            case .ipv4(let address):
                "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)"
            case .ipv6Loopback:
                "[::1]"
            }
        }
    }

    /// The addresses bound together on one port, the first one first.
    let addresses: [Address]
    /// Whether a machine without IPv6 may skip ::1 (for `localhost` only: the
    /// browser then cannot reach ::1 either).
    let ipv6IsOptional: Bool
    /// The port asked for; 0 for an ephemeral one.
    let port: UInt16
    /// The path, percent-encoded as in the URI; `/` when empty.
    let path: String
    private let components: URLComponents

    /// Checks the redirect URI and derives what to bind.
    ///
    /// - Throws: `invalid_configuration` unless it is an `http` URI on a
    ///   loopback literal or `localhost`, with no user info and no fragment.
    init(_ redirectURI: URL) throws(OAuth2Error) {
        guard let components = URLComponents(url: redirectURI, resolvingAgainstBaseURL: false),
            components.scheme?.lowercased() == "http",
            let rawHost = components.host, !rawHost.isEmpty
        else {
            throw Self.refusal(redirectURI, "it is not an http URI with a host")
        }
        guard components.user == nil, components.password == nil, components.fragment == nil else {
            throw Self.refusal(redirectURI, "it has user info or a fragment (RFC 6749 §3.1.2)")
        }
        let host = rawHost.lowercased().trimmingPrefix("[").prefix { $0 != "]" }
        if host == "localhost" {
            addresses = [.ipv4(0x7F00_0001), .ipv6Loopback]
            ipv6IsOptional = true
        } else if host == "::1" {
            addresses = [.ipv6Loopback]
            ipv6IsOptional = false
        } else if let ipv4 = Self.ipv4(String(host)), ipv4 >> 24 == 127 {
            addresses = [.ipv4(ipv4)]
            ipv6IsOptional = false
        } else {
            throw Self.refusal(redirectURI, "its host is not 127.0.0.1, [::1] or localhost")
        }
        let port = components.port ?? 0
        guard (0...65_535).contains(port) else {
            throw Self.refusal(redirectURI, "its port is out of range")
        }
        self.port = UInt16(port)
        self.path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        self.components = components
    }

    /// The redirect URI with `port`, and its origin (`http://host:port`).
    func uris(port: UInt16) -> (redirectURI: URL, origin: String)? {
        var withPort = components
        withPort.port = Int(port)
        if withPort.percentEncodedPath.isEmpty { withPort.percentEncodedPath = "/" }
        var origin = withPort
        origin.percentEncodedPath = ""
        origin.percentEncodedQuery = nil
        guard let redirectURI = withPort.url, let originString = origin.string else { return nil }
        return (redirectURI, originString)
    }

    /// A dotted-quad IPv4 literal in host byte order.
    private static func ipv4(_ text: String) -> UInt32? {
        var address = in_addr()
        guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
        return UInt32(bigEndian: address.s_addr)
    }

    private static func refusal(_ redirectURI: URL, _ reason: String) -> OAuth2Error {
        OAuth2Error(
            code: .invalidConfiguration,
            message: "\(redirectURI.withoutQuery) is not a loopback redirect URI: \(reason)"
        )
    }
}

extension URL {
    /// The URL without its query and fragment, for messages.
    var withoutQuery: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else { return "(not a URL)" }
        components.percentEncodedQuery = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        return components.string ?? "(not a URL)"
    }
}
