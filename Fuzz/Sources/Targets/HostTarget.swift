#if canImport(Glibc)
import Glibc
#endif
import CCurl
import Foundation
import OAuth2

/// The host differential of issue 11: the library's reading of a URL
/// against libcurl's, which is what connects.
///
/// The library decides with Foundation's `URL` whether a URL may carry a
/// token (`EndpointPolicy`: https, or http to a loopback host), whether a
/// redirect stays on the token's origin (`Origin`), and hands libcurl
/// `url.absoluteString` (`CurlTransfer`). If libcurl reads another scheme,
/// host or port from that string than Foundation did, the token goes where
/// the library never judged: a disagreement is a token leak.
///
/// Input: a URL, or `base\nreference`, the reference resolved against the
/// base as `SigningTransport` resolves a `Location`. For every URL the
/// transport accepts (`CurlTransfer.init`) and libcurl parses with the flags
/// it uses for `CURLOPT_URL` (`CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME`):
/// - the schemes are equal, ignoring case;
/// - the hosts name the same thing: equal ignoring case, or the same IPv4
///   or IPv6 address however written (libcurl normalises `127.1` to
///   `127.0.0.1` and IPv6 text to its shortest form; the token then goes to
///   the address Foundation's host names, so this is no leak); an IPv6
///   zone id is left out (the two disagree on an empty one, `[::%25]`, and
///   on how far to decode it; a zone only picks the interface for the same
///   address, and the library never calls a host with a zone loopback);
/// - the ports are equal, defaults filled in;
/// - what the library calls a loopback host, libcurl's host is too (by a
///   judgement of its own: `localhost`, 127.0.0.0/8, ::1), and a URL the
///   library deems secure is https or http to such a host for libcurl;
/// - `URLParts`, where it reads the same string, sees the same host and port;
/// - `HTTPTarget`, where it reads a plain URL's text, reads what `URL` reads;
/// - `HostAddress` (discovery's SSRF rule): a host it calls a name is a name
///   to libcurl, one it calls a public address is that address to libcurl.
/// A URL that only one side parses is no leak: Foundation refusing means no
/// request; libcurl refusing means the request fails before any connection.
/// The other way round, a host libcurl calls loopback and the library does
/// not (`127.1`, `a.localhost`) only makes the library refuse http.
enum HostTarget {
    private static let configuration = CurlTransport.Configuration()

    static func run(_ bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        if lines.count == 2 {
            guard let base = URL(string: String(lines[0])) else { return }
            check(base)
            if let next = URL(string: String(lines[1]), relativeTo: base)?.absoluteURL { check(next) }
        } else if let url = URL(string: text) {
            check(url)
        }
    }

    private static func check(_ url: URL) {
        guard let transfer = try? CurlTransfer(request: HTTPTransportRequest(url: url), configuration: configuration),
            let curl = CurlURL(transfer.urlString)
        else { return }
        let origin = Origin(url)
        guard origin.scheme == curl.scheme.lowercased() else {
            violation("scheme: Foundation \(origin.scheme), libcurl \(curl.scheme)")
        }
        guard Address(origin.host) == Address(curl.host) else {
            violation("host: Foundation \(origin.host), libcurl \(curl.host)")
        }
        guard origin.port == curl.port else {
            violation("port: Foundation \(origin.port), libcurl \(curl.port)")
        }
        if let plain = HTTPTarget(plain: transfer.urlString), plain != HTTPTarget(parsed: url) {
            violation("HTTPTarget reads \(plain.host):\(plain.port) from the text, URL \(origin.host):\(origin.port)")
        }
        let loopback = EndpointPolicy.isLoopback(host: EndpointPolicy.host(of: url))
        guard loopback == transfer.isLoopbackHost else { violation("the transfer's loopback judgement differs from EndpointPolicy's") }
        if loopback && !Address(curl.host).isLoopback {
            violation("EndpointPolicy calls \(origin.host) loopback, libcurl connects to \(curl.host)")
        }
        if EndpointPolicy.isSecure(url) && !(curl.scheme.lowercased() == "https" || Address(curl.host).isLoopback) {
            violation("EndpointPolicy lets a token go to \(curl.scheme)://\(curl.host)")
        }
        if let parts = URLParts(transfer.urlString[...]), let host = parts.host, let port = parts.effectivePort {
            let decoded = host.removingPercentEncoding ?? String(host)
            guard Address(decoded) == Address(curl.host), port == curl.port else {
                violation("URLParts reads \(host):\(port), libcurl \(curl.host):\(curl.port)")
            }
            checkAddressClass(host, curl: Address(curl.host))
        }
    }
}

/// Discovery's SSRF rule (`HostAddress`) against libcurl: a host it calls a
/// name is no address to libcurl, and one it calls a public address is that
/// very address, not loopback. (Internal and ambiguous hosts are refused, so
/// any reading of them is safe.)
private func checkAddressClass(_ host: Substring, curl: Address) {
    switch HostAddress(host: host) {
    case .name:
        if case .name = curl { return }
        violation("HostAddress calls \(host) a name, libcurl connects to an address")
    case .publicAddress:
        guard Address(String(host)) == curl, !curl.isLoopback else {
            violation("HostAddress calls \(host) a public address, libcurl reads another one")
        }
    case .internalAddress, .ambiguous:
        return
    }
}

/// A URL as libcurl parses it for a transfer.
private struct CurlURL {
    var scheme: String
    var host: String
    var port: Int

    init?(_ text: String) {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, text, UInt32(CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK else {
            return nil
        }
        func get(_ part: CURLUPart, _ flags: Int32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, part, &value, UInt32(flags)) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        guard let scheme = get(CURLUPART_SCHEME), let host = get(CURLUPART_HOST),
            let portText = get(CURLUPART_PORT, CURLU_DEFAULT_PORT), let port = Int(portText)
        else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port
    }
}

/// What a host names, for comparing two spellings: an IPv4 address (any
/// form `inet_aton` reads, as libcurl and the resolver do), an IPv6 address
/// (its zone id left out), or a name ignoring ASCII case.
private enum Address: Equatable {
    case ipv4(UInt32)
    case ipv6([UInt8])
    case name(String)

    init(_ host: String) {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let percent = text.firstIndex(of: "%") { text = text[..<percent] }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, String(text), &v6) == 1 {
            self = .ipv6(withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        var v4 = in_addr()
        if inet_aton(host, &v4) != 0 {
            self = .ipv4(UInt32(bigEndian: v4.s_addr))
            return
        }
        self = .name(host.lowercased())
    }

    /// libcurl's side of "loopback", judged without the library's code.
    var isLoopback: Bool {
        switch self {
        case .ipv4(let address): return address >> 24 == 127
        case .ipv6(let bytes): return bytes == Array(repeating: 0, count: 15) + [1]
        case .name(let name): return name == "localhost"
        }
    }
}
