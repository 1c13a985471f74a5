#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// OpenID Provider Issuer Discovery (OpenID Connect Discovery 1.0 §2): from
/// what a user types — `joe@example.com`, `example.com`, a URL — to the
/// issuer of their OpenID provider, by WebFinger (RFC 7033).
///
/// ```swift
/// let issuer = try await OpenIDIssuer.webFinger("joe@example.com", transport: transport)
/// let configuration = try await OAuth2Configuration.discover(issuer: issuer, clientID: clientID, transport: transport)
/// ```
///
/// or in one call, ``OAuth2Configuration/discover(webFinger:clientID:clientSecret:rules:transport:)``.
public enum OpenIDIssuer {
    /// The link relation of an OpenID Connect issuer in a WebFinger answer
    /// (OpenID Connect Discovery 1.0 §2).
    public static let linkRelation = "http://openid.net/specs/connect/1.0/issuer"

    /// The longest identifier taken, in bytes: an identifier is typed by a
    /// person, and a longer one only makes a longer request to a host it names.
    public static let maxIdentifierLength = 1024

    /// Looks up the issuer of the OpenID provider a user identifier belongs to.
    ///
    /// The identifier is normalized as OpenID Connect Discovery §2.1 says: one
    /// without a scheme that is `user@host` (no port, path or query) is
    /// `acct:user@host`, any other without a scheme is `https://…`; `acct:`,
    /// `https:` and `http:` identifiers are taken as they are; a fragment is
    /// dropped. The WebFinger host is the identifier's authority (for `acct:`,
    /// what follows the last `@`), asked
    /// `GET https://HOST/.well-known/webfinger?resource=…&rel=http%3A%2F%2Fopenid.net%2Fspecs%2Fconnect%2F1.0%2Fissuer`
    /// (RFC 7033 §4) — over `https` always (RFC 7033 §9.1, whatever the
    /// identifier's scheme), but for a loopback host, which the library lets
    /// use `http` everywhere (DESIGN.md §5): an `acct:` or `http:` identifier
    /// on one is asked over `http`, an `https:` one (or one without a scheme,
    /// which §2.1 makes `https:`) over `https`. No redirect is followed.
    ///
    /// The identifier usually comes from a user, and the lookup goes where it
    /// points: unless ``DiscoveryRules/allowsPrivateAuthorizationServers`` is
    /// set, a host that is `localhost` or an internal or ambiguous IP literal
    /// (``DiscoveryRules``' SSRF rule) is not asked. A DNS name is judged by
    /// its text only.
    ///
    /// The answer (a JRD, `application/jrd+json` or `application/json`, at
    /// most ``DiscoveryRules/maxDocumentSize`` bytes) must have a `links` entry
    /// with the issuer ``linkRelation`` and an `href`: the issuer, returned
    /// exactly as written, which discovery then requires the provider's
    /// configuration to name. It must be an absolute `https` URL without user
    /// info, query or fragment (`http` only to a loopback host, named by a
    /// loopback WebFinger host), on a public host unless the WebFinger host is
    /// internal itself or the rules allow private servers, and one of
    /// ``DiscoveryRules/allowedAuthorizationServers`` when that is set. The
    /// JRD's `subject` may differ from the identifier (RFC 7033 §4.4.1) and is not read.
    ///
    /// - Parameters:
    ///   - identifier: what the user typed, at most ``maxIdentifierLength`` bytes of visible ASCII
    ///     (leading and trailing white space is ignored).
    ///   - rules: the limits of the lookup (size, timeout, private hosts, allowed issuers).
    ///   - transport: what the request goes through.
    /// - Returns: the issuer identifier, for ``OAuth2Configuration/discover(issuer:clientID:clientSecret:transport:cache:clientCertificate:issuerRule:)``.
    /// - Throws: ``OAuth2Error`` `invalid_identifier` for an identifier that
    ///   cannot be normalized or whose host may not be asked; `webfinger_failed`
    ///   for an answer that is not a JRD naming a usable issuer;
    ///   `unexpected_redirect`, `response_too_large`, `rate_limited`,
    ///   `http_error` (a 404 too: the host knows no such identifier), or the
    ///   host's own `error` when an error answer carries one;
    ///   `timeout`, `tls_error`, `transport_error` when no answer came.
    public static func webFinger(
        _ identifier: String, rules: DiscoveryRules = DiscoveryRules(), transport: any HTTPTransport
    ) async throws(OAuth2Error) -> String {
        let transport = rules.guarding(transport)
        let lookup = try WebFingerLookup(identifier: identifier, rules: rules)
        let request = HTTPTransportRequest.providerDocument(
            lookup.url, accept: "application/jrd+json, application/json", timeout: rules.timeout, maxResponseSize: rules.maxDocumentSize)
        let response = try await OAuth2Error.performing(request, on: transport)
        return try lookup.issuer(in: response, rules: rules)
    }
}

/// One WebFinger lookup: the normalized identifier, the host it is asked of,
/// and the reading of the answer (package-visible for the fuzz target).
package struct WebFingerLookup {
    /// The normalized identifier, the WebFinger `resource`.
    package let resource: String
    /// The WebFinger request's URL.
    package let url: URL
    /// The WebFinger host's parts (scheme, host, port), what the issuer is judged against.
    package let host: URLParts

    package init(identifier: String, rules: DiscoveryRules) throws(OAuth2Error) {
        let (resource, authority) = try Self.normalize(identifier)
        func refused(_ why: String) -> OAuth2Error {
            OAuth2Error(code: .invalidIdentifier, message: "the identifier's WebFinger host \(why)")
        }
        // The host is checked on its own text before any scheme is chosen for it.
        guard let probe = URLParts("https://\(authority)"[...]), let name = probe.host, !name.isEmpty, probe.userinfo == nil,
            probe.path.isEmpty, probe.effectivePort != nil
        else { throw refused("is not a host name or address with an optional port") }
        switch HostAddress(host: name) {
        case .name, .publicAddress:
            break
        case .internalAddress, .ambiguous:
            guard rules.allowsPrivateAuthorizationServers else {
                throw refused(
                    "is localhost or a loopback, private, link-local or ambiguous address, which the discovery rules do not allow")
            }
        }
        // RFC 7033 §4 and §9.1: https, never a fallback to http. Loopback http is
        // the library's one exception (DESIGN.md §5), for local providers and
        // tests: for an identifier on a loopback host that does not say https itself.
        let saysHTTPS = resource.utf8.prefix(6).elementsEqual("https:".utf8) { ($0 | 0x20) == $1 }
        let scheme = EndpointPolicy.isLoopback(host: String(name)) && !saysHTTPS ? "http" : "https"
        let query = FormURLEncoding.encode([("resource", resource), ("rel", OpenIDIssuer.linkRelation)], spaceAsPlus: false)
        guard let url = URL(string: "\(scheme)://\(authority)/.well-known/webfinger?\(query)"),
            let host = URLParts("\(scheme)://\(authority)"[...])
        else { throw refused("cannot make a URL") }
        self.resource = resource
        self.url = url
        self.host = host
    }

    /// OpenID Connect Discovery 1.0 §2.1: the WebFinger resource for what a
    /// user typed, and the authority (`host[:port]`) it is looked up at.
    static func normalize(_ identifier: String) throws(OAuth2Error) -> (resource: String, authority: Substring) {
        func invalid(_ why: String) -> OAuth2Error {
            OAuth2Error(code: .invalidIdentifier, message: "the identifier \(why)")
        }
        let trimmed = identifier.trimmingSurroundingWhitespace
        guard !trimmed.isEmpty else { throw invalid("is empty") }
        guard trimmed.utf8.count <= OpenIDIssuer.maxIdentifierLength else {
            throw invalid("is longer than \(OpenIDIssuer.maxIdentifierLength) bytes")
        }
        guard trimmed.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw invalid("has a character that is not visible ASCII (white space, a control character, or beyond ASCII)")
        }
        var text = String(trimmed)
        if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }

        let scheme = Self.scheme(of: text)
        switch scheme?.lowercased() {
        case nil:
            // No scheme: `[userinfo "@"] host [":" port] path-abempty ["?" query]`.
            let end = text.firstIndex { $0 == "/" || $0 == "?" } ?? text.endIndex
            let authority = text[..<end]
            if let at = authority.lastIndex(of: "@") {
                let user = authority[..<at]
                let hostAndPort = authority[authority.index(after: at)...]
                guard !user.isEmpty else { throw invalid("has nothing before its @") }
                if end == text.endIndex, !Self.hasPort(hostAndPort) {
                    return ("acct:" + text, hostAndPort)
                }
                // §2.1's https URL keeps the userinfo; the host is asked without it.
                return ("https://" + text, hostAndPort)
            }
            return ("https://" + text, authority)
        case "acct"?:
            // RFC 7565: `acct:userpart@host`; a userpart's own `@` is percent-encoded, so the host follows the last one.
            let rest = text.dropFirst("acct:".count)
            let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            guard let at = rest[..<end].lastIndex(of: "@"), at > rest.startIndex else {
                throw invalid("is an acct: URI without a user and a host (acct:user@host)")
            }
            return (text, rest[rest.index(after: at)..<end])
        case "https"?, "http"?:
            guard let parts = URLParts(text[...]), let host = parts.host, !host.isEmpty else {
                throw invalid("is not an absolute URL with a host")
            }
            var authority = host
            if let port = parts.port, !port.isEmpty {
                authority = text[host.startIndex..<port.endIndex]
            }
            return (text, authority)
        case let other?:
            throw invalid("has the scheme \(other), which is neither acct, https nor http")
        }
    }

    /// The identifier's RFC 3986 scheme, if it has one. `host:port` reads as
    /// a scheme to RFC 3986's grammar; §2.1's examples (`example.com:8080`)
    /// treat it as a host and port, so a "scheme" followed by a port is not one.
    private static func scheme(of text: String) -> Substring? {
        guard let colon = text.firstIndex(of: ":"), colon > text.startIndex else { return nil }
        let candidate = text[..<colon]
        guard let first = candidate.utf8.first, (first | 0x20) >= UInt8(ascii: "a"), (first | 0x20) <= UInt8(ascii: "z"),
            candidate.utf8.allSatisfy({ byte in
                let lower = byte | 0x20
                return (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            })
        else { return nil }
        let after = text[text.index(after: colon)...]
        let digits = after.prefix { $0.isASCII && $0.isNumber }
        let rest = after.dropFirst(digits.count)
        if !digits.isEmpty, rest.isEmpty || rest.first == "/" || rest.first == "?" { return nil }
        return candidate
    }

    /// Whether `host[:port]` has a port (an IPv6 literal's colons are inside its brackets).
    private static func hasPort(_ hostAndPort: Substring) -> Bool {
        let afterLiteral = hostAndPort.lastIndex(of: "]").map { hostAndPort[hostAndPort.index(after: $0)...] } ?? hostAndPort
        return afterLiteral.contains(":")
    }

    /// The issuer a WebFinger answer names (RFC 7033 §4.4, OpenID Connect Discovery 1.0 §2), checked.
    package func issuer(in response: HTTPTransportResponse, rules: DiscoveryRules) throws(OAuth2Error) -> String {
        let endpoint = "WebFinger endpoint"
        try ProviderResponse.requireSuccess(response, endpoint: endpoint, maxBodySize: rules.maxDocumentSize, now: nil)
        func failed(_ problem: String) -> OAuth2Error {
            OAuth2Error(code: .webFingerFailed, message: "the WebFinger answer \(problem)", httpStatus: response.status.code)
        }
        guard ProviderResponse.bodyFormat(of: response) == .json else { throw failed("is not JSON (application/jrd+json)") }
        let object: [String: JSONValue]
        do throws(OAuth2Error) {
            object = try ProviderResponse.object(of: response, endpoint: endpoint)
        } catch {
            throw failed("is not a JSON object")
        }
        guard case .array(let links)? = object["links"] else { throw failed("has no links array") }
        // The first link of the relation with an href; entries of other relations are not read (RFC 7033 §4.4.4).
        var href: String?
        for case .object(let link) in links where link["rel"]?.stringValue == OpenIDIssuer.linkRelation {
            guard let value = link["href"]?.stringValue else { throw failed("has an issuer link whose href is not a string") }
            href = value
            break
        }
        guard let issuer = href else { throw failed("names no OpenID Connect issuer (no link of rel \(OpenIDIssuer.linkRelation))") }
        if let refusal = ProtectedResourceMetadata.refusal(ofAuthorizationServer: issuer, requested: host, rules: rules) {
            throw failed("names an issuer that \(refusal)")
        }
        return issuer
    }
}
