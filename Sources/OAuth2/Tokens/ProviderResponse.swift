#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// What every answer of a provider endpoint (token, revocation, device
/// authorization, metadata) is read with: the status rules, the body as a
/// JSON or form object, the OAuth error object, numeric fields.
///
/// No error made here quotes the body: it may hold a token.
package enum ProviderResponse {
    /// The longest `Retry-After` honoured; a longer one is clamped to it.
    package static let maxRetryAfter: Duration = .seconds(86_400)

    /// Throws unless the answer is a 2xx within the size limit.
    ///
    /// - Throws: `response_too_large` over `maxBodySize`; `unexpected_redirect`
    ///   for a 3xx; `rate_limited` for a 429 (with `Retry-After` when it is
    ///   delay-seconds, or an IMF-fixdate when `now` is given); the provider's error for another
    ///   non-2xx carrying an OAuth error object; `http_error` otherwise.
    static func requireSuccess(
        _ response: HTTPTransportResponse,
        endpoint: String,
        maxBodySize: Int,
        now: Date?
    ) throws(OAuth2Error) {
        guard response.body.count <= maxBodySize else {
            throw OAuth2Error(
                code: .responseTooLarge,
                message: "the \(endpoint)'s answer is larger than \(maxBodySize) bytes",
                httpStatus: response.status.code
            )
        }
        switch response.status.code {
        case 200...299:
            return
        case 300...399:
            throw OAuth2Error(
                code: .unexpectedRedirect,
                message: "the \(endpoint) answered with a redirect (HTTP \(response.status.code)), which is not followed",
                httpStatus: response.status.code
            )
        case 429:
            throw rateLimited(response, by: "the \(endpoint)", now: now)
        default:
            if let error = providerError(in: response) { throw error }
            throw OAuth2Error(
                code: .httpError,
                message: "the \(endpoint) answered HTTP \(response.status.code) without an OAuth error",
                httpStatus: response.status.code
            )
        }
    }

    /// The provider's OAuth error object in the body (JSON or form, any status), if there is one.
    static func providerError(in response: HTTPTransportResponse) -> OAuth2Error? {
        guard let object = try? object(of: response, endpoint: "provider") else { return nil }
        return providerError(in: object, httpStatus: response.status.code)
    }

    /// The error of an object with a string `error` (RFC 6749 §5.2), kept verbatim.
    ///
    /// An `error` that is empty, long, or has characters RFC 6749 §A.7 does
    /// not allow is not treated as an OAuth error object.
    static func providerError(in object: [String: JSONValue], httpStatus: Int) -> OAuth2Error? {
        guard let error = object["error"]?.stringValue, ProviderText.isErrorCode(error) else { return nil }
        return OAuth2Error.provider(
            error: error,
            description: object["error_description"]?.stringValue,
            uri: object["error_uri"]?.stringValue,
            httpStatus: httpStatus
        )
    }

    /// The member `name` of a provider's JSON object as an array of strings:
    /// `nil` when absent or `null`; `invalid` (given what is wrong, "has a
    /// NAME that is not an array of strings") for any other type or element.
    static func strings(_ name: String, in object: [String: JSONValue], _ invalid: (String) -> OAuth2Error) throws(OAuth2Error)
        -> [String]?
    {
        switch object[name] {
        case nil, .null?:
            return nil
        case .array(let values)?:
            var strings: [String] = []
            strings.reserveCapacity(values.count)
            for value in values {
                guard let string = value.stringValue else { throw invalid("has a \(name) that is not an array of strings") }
                strings.append(string)
            }
            return strings
        default:
            throw invalid("has a \(name) that is not an array of strings")
        }
    }

    /// The member `name` as a boolean: `nil` when absent or `null`;
    /// `invalid` ("has a NAME that is not a boolean") for any other type.
    static func flag(_ name: String, in object: [String: JSONValue], _ invalid: (String) -> OAuth2Error) throws(OAuth2Error) -> Bool? {
        switch object[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw invalid("has a \(name) that is not a boolean")
        }
    }

    /// The body as an object: JSON by content type (`application/json`,
    /// `*+json`), form for `application/x-www-form-urlencoded` (GitHub), and
    /// sniffed for `text/plain` or no content type (`{` or `[` first → JSON,
    /// else form). Another content type is read only when it starts with `{`,
    /// so an HTML page is refused.
    ///
    /// - Throws: `invalid_token_response` when the body is not such an object
    ///   (not JSON, not an object, duplicate keys, invalid UTF-8, too deep, …).
    static func object(of response: HTTPTransportResponse, endpoint: String) throws(OAuth2Error) -> [String: JSONValue] {
        let format = bodyFormat(of: response)
        switch format {
        case .json:
            let value: JSONValue
            do throws(JSONParser.Failure) {
                value = try JSONParser.parse(response.body)
            } catch {
                throw invalidResponse(endpoint, "is not valid JSON (\(error.reason))", response)
            }
            guard case .object(let object) = value else {
                throw invalidResponse(endpoint, "is not a JSON object", response)
            }
            return object
        case .form:
            let pairs: [(String, String)]
            do throws(FormURLEncoding.Failure) {
                guard response.body.withUnsafeBytes({ UTF8Validation.isValid($0) }) else {
                    throw FormURLEncoding.Failure(reason: "the body is not UTF-8")
                }
                pairs = try FormURLEncoding.decode(response.bodyText[...])
            } catch {
                throw invalidResponse(endpoint, "is not a valid form-encoded body (\(error.reason))", response)
            }
            var object: [String: JSONValue] = [:]
            for (name, value) in pairs {
                guard object.updateValue(.string(value), forKey: name) == nil else {
                    throw invalidResponse(endpoint, "repeats a parameter", response)
                }
            }
            return object
        case .unusable:
            throw invalidResponse(endpoint, "has a content type that is neither JSON nor form-encoded", response)
        }
    }

    enum BodyFormat: Equatable {
        case json
        case form
        case unusable
    }

    static func bodyFormat(of response: HTTPTransportResponse) -> BodyFormat {
        let mediaType =
            response.headers[.contentType].map { value in
                (value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                    .trimmingOWS
                    .lowercased()
            } ?? ""
        let first = response.body.first { !$0.isJSONWhitespace }
        let looksLikeJSON = first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
        if mediaType == "application/json" || mediaType.hasSuffix("+json") {
            return .json
        }
        switch mediaType {
        case "application/x-www-form-urlencoded":
            return .form
        case "", "text/plain":
            return looksLikeJSON ? .json : .form
        default:
            return first == UInt8(ascii: "{") ? .json : .unusable
        }
    }

    /// A field of seconds: absent, a value, or unusable.
    enum Seconds: Equatable {
        case absent
        case value(Double)
        case invalid
    }

    /// Reads a number of seconds given as a JSON number or a numeric string
    /// (`"3600"`, `"3599.5"`); `null` counts as absent. Negative, non-finite
    /// and non-numeric values are invalid.
    static func seconds(_ value: JSONValue?) -> Seconds {
        switch value {
        case nil, .null?:
            return .absent
        case .number(let number)?:
            return number.isFinite && number >= 0 ? .value(number) : .invalid
        case .string(let text)?:
            guard isDecimal(text), let number = Double(text), number.isFinite else { return .invalid }
            return .value(number)
        default:
            return .invalid
        }
    }

    /// Whether the text is `digits` or `digits.digits`, nothing else.
    private static func isDecimal(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        return (1...2).contains(parts.count)
            && parts.allSatisfy { part in
                !part.isEmpty && part.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            }
    }

    /// Whether the text is non-empty and only printable ASCII (`VSCHAR`, RFC 6749 §A),
    /// as tokens and codes must be: anything else could split a header.
    static func isVisibleASCII(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// The `rate_limited` error of a 429 from `who` (the token endpoint, a
    /// resource server), with `Retry-After` when it is given: one code and one
    /// message wherever a 429 comes from.
    static func rateLimited(_ response: HTTPTransportResponse, by who: String, now: Date?) -> OAuth2Error {
        let delay = response.headers[.retryAfter].flatMap { retryAfter($0, now: now) }
        let when = delay.map { "; retry after \($0.secondsDescription)" } ?? ""
        return OAuth2Error(
            code: .rateLimited,
            message: "\(who) is rate limiting requests (HTTP 429)\(when)",
            httpStatus: response.status.code,
            retryAfter: delay
        )
    }

    /// A `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an IMF-fixdate, clamped to ``maxRetryAfter``.
    package static func retryAfter(_ value: String, now: Date?) -> Duration? {
        let text = String(value.trimmingOWS)
        if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            guard text.utf8.count <= 9, let seconds = Int(text) else { return maxRetryAfter }
            return min(.seconds(seconds), maxRetryAfter)
        }
        guard let now, let date = HTTPDate.parse(text) else { return nil }
        let seconds = max(0, date.timeIntervalSince(now))
        return min(.seconds(seconds), maxRetryAfter)
    }

    private static func invalidResponse(_ endpoint: String, _ problem: String, _ response: HTTPTransportResponse) -> OAuth2Error {
        OAuth2Error(
            code: .invalidTokenResponse,
            message: "the \(endpoint)'s answer \(problem)",
            httpStatus: response.status.code
        )
    }
}

private extension UInt8 {
    var isJSONWhitespace: Bool { self == 0x20 || self == 0x09 || self == 0x0A || self == 0x0D }
}
