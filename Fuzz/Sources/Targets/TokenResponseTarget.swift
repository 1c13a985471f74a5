import Foundation
import OAuth2

/// The token-response pipeline (`TokenResponseParser.parse`: status rules,
/// body format, JSON or form, the token's fields) on hostile answers.
///
/// The first byte picks the status and the `Content-Type`; the rest is the
/// body. Checked: no crash; a token comes only from a 2xx and has a
/// non-empty printable-ASCII access token, a Bearer type, an expiry within
/// ten years of the request, a printable refresh token; neither an error
/// nor the token's `description` quotes the access or refresh token.
enum TokenResponseTarget {
    private static let statuses = [200, 201, 400, 401, 429, 500, 302, 204]
    private static let contentTypes: [String?] = [
        "application/json", nil, "text/plain", "application/x-www-form-urlencoded",
        "application/json; charset=utf-8", "text/html", "application/jwt+json", "Application/JSON ;x",
    ]
    private static let requestedAt = Date(timeIntervalSince1970: 1_700_000_000)

    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let selector = bytes.first else { return }
        let status = statuses[Int(selector & 0x07)]
        var headers = HTTPFields()
        if let contentType = contentTypes[Int(selector >> 3 & 0x07)] {
            headers.append(HTTPField(name: .contentType, value: contentType))
        }
        if selector & 0x40 != 0 {
            headers.append(HTTPField(name: .retryAfter, value: "120"))
        }
        let body = Data(bytes.dropFirst())
        let response = HTTPTransportResponse(status: HTTPResponse.Status(code: status), headers: headers, body: body)
        let secrets = secretCandidates(in: body)
        do throws(OAuth2Error) {
            let token = try TokenResponseParser.parse(response, requestedAt: requestedAt, requestedScopes: ["read"])
            check(token, status: status)
            for secret in secrets where "\(token)".contains(secret) || String(reflecting: token).contains(secret) {
                violation("a token's description quotes its access or refresh token")
            }
        } catch {
            let text = "\(error) \(error.message)"
            for secret in secrets where text.contains(secret) {
                violation("a token-response error (\(error.code)) quotes an access or refresh token")
            }
        }
    }

    private static func check(_ token: AccessToken, status: Int) {
        guard (200...299).contains(status) else { violation("a token from an HTTP \(status) answer") }
        let access = token.accessToken.value
        guard !access.isEmpty, access.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            violation("an access token that is empty or not printable ASCII")
        }
        guard token.tokenType.lowercased() == "bearer" else { violation("a token type other than Bearer") }
        if let expiresAt = token.expiresAt {
            let seconds = expiresAt.timeIntervalSince(requestedAt)
            guard seconds >= 0, seconds <= TokenResponseParser.maxExpiresIn else {
                violation("an expiry \(seconds) s after the request, outside 0…10 years")
            }
        }
        if let refresh = token.refreshToken?.value {
            guard !refresh.isEmpty, refresh.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                violation("a refresh token that is empty or not printable ASCII")
            }
        }
    }

    /// The access and refresh token strings of the body, as JSON or form,
    /// long enough and unusual enough (a digit) not to occur in a message by
    /// chance, and not repeated by the provider in another field (a message
    /// may quote its error, a description the scopes).
    private static func secretCandidates(in body: Data) -> [String] {
        var fields: [String: String] = [:]
        if case .object(let object)? = try? JSONParser.parse(body) {
            for (name, value) in object { if let string = value.stringValue { fields[name] = string } }
        } else if let pairs = try? FormURLEncoding.decode(String(decoding: body, as: UTF8.self)[...]) {
            for (name, value) in pairs { fields[name] = value }
        }
        let secrets = [fields["access_token"], fields["refresh_token"]].compactMap { $0 }
        let others = fields.filter { $0.key != "access_token" && $0.key != "refresh_token" }.map { printable($0.value) }
        return secrets.filter { secret in
            secret.count >= 16 && secret.contains(where: \.isNumber) && !others.contains { $0.contains(secret) }
        }
    }

    /// The text as a message may quote it: control and format characters dropped (`OAuth2Error.sanitize`).
    static func printable(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.lazy.filter { ![.control, .format].contains($0.properties.generalCategory) })
        return String(scalars)
    }
}
