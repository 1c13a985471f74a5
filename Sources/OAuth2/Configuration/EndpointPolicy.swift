/// The rule of DESIGN.md §5: endpoints and every URL a bearer token goes to
/// are `https`, except loopback hosts, which may use `http`.
enum EndpointPolicy {
    /// Whether the host is a loopback host: `localhost`, 127.0.0.0/8 or `::1`.
    static func isLoopback(host: String?) -> Bool {
        guard var host = host?.lowercased() else { return false }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy(\.isASCIIDigit) && (Int(octet) ?? 256) <= 255
        }
    }

    /// Whether a URL may carry secrets: `https`, or `http` to a loopback host.
    static func isSecure(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "https": return url.host != nil && !(url.host ?? "").isEmpty
        case "http": return isLoopback(host: url.host)
        default: return false
        }
    }

    /// Throws `insecure_endpoint` unless the URL may carry secrets.
    static func requireSecure(_ url: URL, role: String) throws(OAuth2Error) {
        guard isSecure(url) else {
            throw OAuth2Error(
                code: .insecureEndpoint,
                message: "the \(role) must be https (http is allowed only for loopback hosts): \(url.redactingQuery)"
            )
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
