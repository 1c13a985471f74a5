import Foundation
import OAuth2

/// `RedirectValidator.validate` against a fixed pending authorization.
///
/// An input starting with `!` is appended to the expected redirect and its
/// state (`http://127.0.0.1:8765/callback?state=…&`), so the fuzzer reaches
/// the parameter rules without guessing the state; any other input is the
/// whole redirect. Checked: no crash; a code only from a URL whose scheme,
/// host, port and path Foundation also reads as the redirect URI's, carrying
/// the right state, and a code without control characters; no error
/// message quotes the state or the code.
enum RedirectTarget {
    private static let state = "st4te-0123456789abcdef"
    private static let redirectURI = "http://127.0.0.1:8765/callback"
    private static let pending = PendingAuthorization(
        url: URL(string: "https://issuer.example/authorize")!,
        state: state,
        codeVerifier: Secret("verifier-0123456789abcdef0123456789abcdef0123"),
        redirectURI: URL(string: redirectURI)!,
        scopes: ["read"],
        expectedIssuer: "https://issuer.example",
        requiresIssuer: false,
        createdAt: Date(timeIntervalSince1970: 1_700_000_000)
    )

    static func run(_ bytes: UnsafeRawBufferPointer) {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasPrefix("!") {
            text = "\(redirectURI)?state=\(state)&" + text.dropFirst()
        }
        do throws(OAuth2Error) {
            let code = try RedirectValidator.validate(text, pending: pending)
            guard !code.value.isEmpty, !code.value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
            else {
                violation("an empty code or one with control characters")
            }
            guard text.contains(state) else { violation("a code from a redirect without the state") }
            // Foundation, where it reads the URL at all, must see the redirect URI's own parts.
            if let url = URL(string: text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                guard url.scheme?.lowercased() == "http", url.host?.lowercased() == "127.0.0.1",
                    url.port == 8765, url.path == "/callback"
                else {
                    violation("a code from a URL that Foundation reads as another scheme, host, port or path")
                }
            }
        } catch {
            // A message may quote the provider's own parameters (error, its
            // description, iss): the state or code inside one of those is the
            // provider's text, not a leak.
            let message = "\(error) \(error.message)"
            if message.contains(state), !inOtherParameters(state, of: text, than: "state") {
                violation("a redirect error (\(error.code)) quotes the state")
            }
            if let code = codeParameter(text), message.contains(code), !inOtherParameters(code, of: text, than: "code") {
                violation("a redirect error (\(error.code)) quotes the code")
            }
        }
    }

    /// The query's `code`, when long and unusual enough not to occur in a message by chance.
    private static func codeParameter(_ text: String) -> String? {
        queryParameters(text).first { $0.0 == "code" }.map(\.1).flatMap { code in
            code.count >= 12 && code.contains(where: \.isNumber) ? code : nil
        }
    }

    /// Whether a parameter other than `name` has `needle` in its name or value, as a message would quote it.
    private static func inOtherParameters(_ needle: String, of text: String, than name: String) -> Bool {
        queryParameters(text).contains { parameter in
            parameter.0 != name && TokenResponseTarget.printable(parameter.0 + " " + parameter.1).contains(needle)
        }
    }

    private static func queryParameters(_ text: String) -> [(String, String)] {
        guard let query = text.split(separator: "?", maxSplits: 1).dropFirst().first else { return [] }
        return (try? FormURLEncoding.decode(query.split(separator: "#", maxSplits: 1).first ?? "")) ?? []
    }
}
