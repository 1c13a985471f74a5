#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Resolves the aggregated and distributed claims of a userinfo answer
/// (OpenID Connect Core 1.0 §5.6.2): `_claim_names` maps a claim to a source
/// of `_claim_sources`, which is a signed JWT (`{"JWT": …}`, aggregated) or an
/// endpoint that answers with one (`{"endpoint": …, "access_token": …}`, distributed).
///
/// A source's claims are taken only from a JWT that verifies with keys the
/// app trusts for it: the OpenID provider's (``openIDProvider``), or an
/// app-named ``ClaimsProvider``'s (its `iss`, or the origin of its endpoint,
/// says which; a JWT naming any other issuer is not trusted). Every failure
/// is recorded for its source (``UserInfo/unresolvedClaimSources``) and costs
/// that source's claims only: the userinfo answer itself is never refused
/// for it, and an unverified claim never reaches ``UserInfo/claims``.
struct ClaimSourceResolver: Sendable {
    /// How the OpenID provider's own signed claims are verified.
    let openIDProvider: SignedClaimsVerification
    /// The app's claims providers, each with how its claims are verified.
    let claimsProviders: [(provider: ClaimsProvider, verification: SignedClaimsVerification)]
    let transport: any HTTPTransport
    let clock: any OAuth2Clock
    let clockLeeway: Duration
    let timeout: Duration?
    /// The largest claims JWT, inline or fetched.
    let maxSize: Int
    /// The endpoint whose answer named the claims endpoints: an endpoint on an
    /// internal address, or over `http`, is fetched only when it is on one too.
    let userinfoEndpoint: URL

    /// The most sources resolved from one answer: each distributed one costs a request.
    static let maxSources = 16
    /// Claims a source may not set: who the answer is about, and the claim sources themselves.
    static let reservedClaims: Set<String> = ["sub", "iss", "aud", "_claim_names", "_claim_sources"]

    /// `info` with the claims of every source that verified, and a record of every one that did not.
    func resolve(_ info: UserInfo) async -> UserInfo {
        var info = info
        let namesValue = info.claims["_claim_names"]
        let sourcesValue = info.claims["_claim_sources"]
        if namesValue == nil, sourcesValue == nil { return info }
        guard case .object(let names)? = namesValue else {
            info.record(Self.unresolved("", [], Self.invalid("the userinfo answer's _claim_names is missing or not a JSON object")))
            return info
        }
        var sources: [String: JSONValue] = [:]
        if case .object(let object)? = sourcesValue { sources = object }
        var bySource: [String: [String]] = [:]
        for (claim, value) in names {
            guard case .string(let source) = value else {
                info.record(Self.unresolved("", [claim], Self.invalid("_claim_names maps \(Self.quoted(claim)) to no source name")))
                continue
            }
            guard !Self.reservedClaims.contains(claim) else {
                info.record(Self.unresolved(source, [claim], Self.invalid("a claim source may not set \(Self.quoted(claim))")))
                continue
            }
            bySource[source, default: []].append(claim)
        }
        for (index, (source, claims)) in bySource.sorted(by: { $0.key < $1.key }).enumerated() {
            guard index < Self.maxSources else {
                info.record(Self.unresolved(source, claims, Self.invalid("the answer has more than \(Self.maxSources) claim sources")))
                continue
            }
            do throws(OAuth2Error) {
                guard case .object(let description)? = sources[source] else {
                    throw Self.invalid("_claim_sources has no object for the source \(Self.quoted(source))")
                }
                let (given, origin) = try await resolve(source: source, description, subject: info.subject)
                let missing = claims.filter { given[$0] == nil }
                info.resolve(given.filter { claims.contains($0.key) }, from: origin)
                if !missing.isEmpty {
                    info.record(
                        Self.unresolved(
                            source, missing, Self.invalid("the claim source's verified JWT does not have every claim named for it")))
                }
            } catch {
                info.record(Self.unresolved(source, claims, error))
            }
        }
        return info
    }

    /// The verified claims of one source, and where they came from.
    private func resolve(source: String, _ description: [String: JSONValue], subject: String) async throws(OAuth2Error)
        -> ([String: JSONValue], ClaimSource)
    {
        let text: String
        let endpoint: URL?
        switch (description["JWT"], description["endpoint"]) {
        case (.string(let jwt)?, nil):
            text = jwt
            endpoint = nil
        case (nil, .string(let url)?):
            let checked = try checkedEndpoint(url)
            text = try await fetch(checked, accessToken: description["access_token"])
            endpoint = checked
        default:
            throw Self.invalid("the claim source \(Self.quoted(source)) has neither a JWT nor an endpoint (a string)")
        }
        let jws = try CompactJWS(String(text.trimmingSurroundingWhitespace), maxSize: maxSize)
        let verification = try verification(for: jws, endpoint: endpoint)
        let claims = try await verification.verifiedClaims(jws, of: "the claim source's JWT")
        // The provider's own JWT about another of its users is not this user's
        // (a claims provider's `sub`, if any, is in its own namespace).
        if verification.issuer == openIDProvider.issuer, let sub = claims["sub"], sub.stringValue != subject {
            throw OAuth2Error(
                code: .subjectMismatch, message: "the claim source's JWT is about another user (sub) than the userinfo answer")
        }
        let now = clock.now().timeIntervalSince1970
        let leeway = clockLeeway.timeInterval
        if let exp = claims["exp"] {
            guard case .number(let seconds) = exp, now <= seconds + leeway else {
                throw Self.invalid("the claim source's JWT has expired, or its exp is not a number")
            }
        }
        // The ID token's rule: claims that are not valid yet are not the user's yet.
        for name in ["nbf", "iat"] {
            guard let value = claims[name] else { continue }
            guard case .number(let seconds) = value, seconds - leeway <= now else {
                throw Self.invalid("the claim source's JWT has its \(name) in the future, beyond the clock leeway, or not a number")
            }
        }
        return (claims, ClaimSource(name: source, issuer: verification.issuer, endpoint: endpoint))
    }

    /// Whose keys verify the JWT: the claims provider whose origin served it;
    /// else the one its `iss` names (read before the signature, only to pick
    /// the keys, which then check that `iss`); else the OpenID provider.
    private func verification(for jws: CompactJWS, endpoint: URL?) throws(OAuth2Error) -> SignedClaimsVerification {
        if let endpoint, let named = claimsProviders.first(where: { $0.provider.serves(endpoint) }) {
            return named.verification
        }
        guard let issuer = (try? jws.payloadObject())?["iss"]?.stringValue, issuer != openIDProvider.issuer else {
            return openIDProvider
        }
        guard let named = claimsProviders.first(where: { $0.provider.issuer == issuer }) else {
            throw OAuth2Error(
                code: .untrustedClaimSource,
                message:
                    "the claim source's JWT names an issuer that is neither the OpenID provider nor a claims provider of the configuration"
            )
        }
        return named.verification
    }

    /// The endpoint, when it may be fetched: `https`, or `http` from loopback
    /// to loopback; not on an internal address unless the userinfo endpoint
    /// is on one too (discovery's rule, ``HostAddress``); anywhere at the
    /// origin of a claims provider the app named.
    private func checkedEndpoint(_ text: String) throws(OAuth2Error) -> URL {
        guard let parts = URLParts(text[...]), parts.isHTTP, let host = parts.host, !host.isEmpty, parts.userinfo == nil,
            parts.fragment == nil, let url = URL(string: text)
        else {
            throw Self.invalid("the claim source's endpoint is not an absolute http(s) URL without user info or fragment")
        }
        if claimsProviders.contains(where: { $0.provider.serves(url) }) { return url }
        let namedBy = URLParts(userinfoEndpoint.absoluteString[...])?.host ?? ""
        if parts.scheme.lowercased() != "https" {
            guard EndpointPolicy.isLoopback(host: String(host)), EndpointPolicy.isLoopback(host: String(namedBy)) else {
                throw OAuth2Error(
                    code: .insecureEndpoint,
                    message:
                        "the claims endpoint \(url.redactingQuery) is not https (http only from a loopback userinfo endpoint to a loopback host)"
                )
            }
        }
        switch (HostAddress(host: host), HostAddress(host: namedBy)) {
        case (.name, _), (.publicAddress, _), (_, .internalAddress), (_, .ambiguous):
            return url
        case (.internalAddress, _), (.ambiguous, _):
            throw OAuth2Error(
                code: .insecureEndpoint,
                message:
                    "the claims endpoint is on a loopback, private or link-local address, which a userinfo endpoint on a public host may not name"
            )
        }
    }

    /// One GET of a claims endpoint: the source's own access token (never
    /// the client's) in the `Authorization` header only (RFC 6750 §2.1, which
    /// §5.6.2 says claims providers must support), no redirect, the size and time limits.
    private func fetch(_ url: URL, accessToken: JSONValue?) async throws(OAuth2Error) -> String {
        var headers: HTTPFields = [.accept: "application/jwt"]
        switch accessToken {
        case nil:
            break
        case .string(let token)?:
            guard Self.isBearerToken(token) else {
                throw Self.invalid("the claim source's access_token is not a bearer token (RFC 6750 §2.1)")
            }
            headers[.authorization] = "Bearer " + token
        default:
            throw Self.invalid("the claim source's access_token is not a string")
        }
        let request = HTTPTransportRequest(
            method: .get, url: url, headers: headers, timeout: timeout, redirects: .never, maxResponseSize: maxSize)
        let response = try await OAuth2Error.performing(request, on: transport)
        try ProviderResponse.requireSuccess(response, endpoint: "claims endpoint", maxBodySize: maxSize, now: clock.now())
        return String(decoding: response.body, as: UTF8.self)
    }

    /// RFC 6750 §2.1's `b64token`: what may follow `Bearer ` without breaking the header.
    static func isBearerToken(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        guard !body.isEmpty, bytes[body.count...].allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy(HTTPToken.isToken68Character)
    }

    private static func invalid(_ message: String) -> OAuth2Error {
        OAuth2Error(code: .invalidClaimSource, message: message)
    }

    private static func unresolved(_ source: String, _ claims: [String], _ error: OAuth2Error) -> UnresolvedClaimSource {
        UnresolvedClaimSource(source: source, claims: claims, code: error.code, message: error.message)
    }

    /// A name from the answer, fit for a message.
    private static func quoted(_ name: String) -> String {
        "\"" + OAuth2Error.sanitize(String(name.prefix(64))) + "\""
    }
}
