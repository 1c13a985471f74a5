import Foundation
import OAuth2

/// OpenID Provider Issuer Discovery by WebFinger (`WebFingerLookup`) on
/// hostile identifiers and answers: the identifier usually comes from a user
/// and decides which host is asked; the answer decides which issuer is discovered.
///
/// The first byte picks the rules (its low bit: private hosts allowed or
/// not); the rest is the identifier up to the first newline, then the JRD
/// body (`application/jrd+json`). Checked: no crash; an identifier is
/// either refused with `invalid_identifier` or gives a request to
/// `/.well-known/webfinger` on its host, over `https` (`http` only to a
/// loopback host, for an identifier that does not say `https`), never to an internal or ambiguous host unless the rules
/// allow it, whose query decodes back to exactly the `resource` (an `acct:`,
/// `https:` or `http:` URI without a fragment) and the issuer `rel`; an
/// answer is refused with `webfinger_failed` or names an issuer that is an
/// absolute `http(s)` URL without user info, query or fragment, `http` only to
/// a loopback host asked from one, internal only when the host asked is or
/// the rules allow it.
enum WebFingerTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let selector = bytes.first else { return }
        let rules = DiscoveryRules(allowsPrivateAuthorizationServers: selector & 1 == 1)
        let rest = bytes.dropFirst()
        let newline = rest.firstIndex(of: UInt8(ascii: "\n")) ?? rest.endIndex
        let identifier = String(decoding: rest[..<newline], as: UTF8.self)
        let body = newline < rest.endIndex ? Data(rest[rest.index(after: newline)...]) : Data()

        let lookup: WebFingerLookup
        do throws(OAuth2Error) {
            lookup = try WebFingerLookup(identifier: identifier, rules: rules)
        } catch {
            if error.code != .invalidIdentifier { violation("an identifier refused with \(error.code), not invalid_identifier") }
            return
        }
        guard let url = URLParts(lookup.url.absoluteString[...]), let host = url.host, !host.isEmpty, url.userinfo == nil else {
            violation("a WebFinger URL without a host, or with user info: \(lookup.url.absoluteString)")
        }
        guard url.path == "/.well-known/webfinger", url.fragment == nil else {
            violation("a WebFinger request to another path: \(lookup.url.absoluteString)")
        }
        let loopback = EndpointPolicy.isLoopback(host: String(host))
        let saysHTTPS = lookup.resource.lowercased().hasPrefix("https:")
        guard url.scheme == (loopback && !saysHTTPS ? "http" : "https") else {
            violation("a WebFinger request over \(url.scheme) to \(host) for \(lookup.resource)")
        }
        let hostKind = HostAddress(host: host)
        if !rules.allowsPrivateAuthorizationServers, hostKind == .internalAddress || hostKind == .ambiguous {
            violation("an internal or ambiguous WebFinger host asked under the default rules: \(host)")
        }
        let resource = lookup.resource.lowercased()
        guard resource.hasPrefix("acct:") || resource.hasPrefix("https:") || resource.hasPrefix("http:"), !resource.contains("#") else {
            violation("a resource that is no normalized identifier: \(lookup.resource)")
        }
        guard let query = url.query, let pairs = try? FormURLEncoding.decode(query),
            pairs.map(\.0) == ["resource", "rel"], pairs[0].1 == lookup.resource, pairs[1].1 == OpenIDIssuer.linkRelation
        else { violation("the query does not decode to the resource and rel: \(lookup.url.absoluteString)") }

        var headers = HTTPFields()
        headers.append(HTTPField(name: .contentType, value: "application/jrd+json"))
        let response = HTTPTransportResponse(status: 200, headers: headers, body: body)
        let issuer: String
        do throws(OAuth2Error) {
            issuer = try lookup.issuer(in: response, rules: rules)
        } catch {
            if error.code != .webFingerFailed && error.code != .responseTooLarge {
                violation("an answer refused with \(error.code), not webfinger_failed")
            }
            return
        }
        guard let parts = URLParts(issuer[...]), parts.isHTTP, let issuerHost = parts.host, !issuerHost.isEmpty, parts.query == nil,
            parts.fragment == nil, parts.userinfo == nil
        else { violation("an issuer that is no issuer identifier: \(issuer)") }
        if parts.scheme.lowercased() == "http", !(EndpointPolicy.isLoopback(host: String(issuerHost)) && loopback) {
            violation("a plain http issuer not on loopback, or named by a host that is not: \(issuer)")
        }
        switch HostAddress(host: issuerHost) {
        case .name, .publicAddress: break
        case .internalAddress, .ambiguous:
            if !rules.allowsPrivateAuthorizationServers, hostKind != .internalAddress, hostKind != .ambiguous {
                violation("an internal issuer named by a public WebFinger host: \(issuer)")
            }
        }
    }
}
