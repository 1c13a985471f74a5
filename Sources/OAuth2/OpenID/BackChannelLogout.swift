#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The app's side of OpenID Connect Back-Channel Logout 1.0: the request
/// the provider POSTs to the client's `backchannel_logout_uri` (§2.5), and
/// the answer the app gives (§2.8).
///
/// A route is three steps: hand the body to
/// ``OAuth2Provider/verifyLogoutRequest(body:)``, end the sessions the
/// returned ``LogoutToken`` names, and answer with ``ok`` — or, whatever it
/// threw, ``failure(_:)`` (400: the provider may retry or tell its admin).
///
/// ```swift
/// router.post("backchannel-logout") { request, _ in
///     let body = try await request.body.collect(upTo: BackChannelLogout.maxBodySize)
///     let answer: BackChannelLogout
///     do {
///         let logout = try await provider.verifyLogoutRequest(body: Data(buffer: body))
///         await sessions.end(where: logout.ends)      // the app's sessions, by their ID tokens
///         answer = .ok
///     } catch { answer = .failure(error) }
///     return Response(status: answer.status, headers: answer.headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
/// }
/// ```
public struct BackChannelLogout: Sendable {
    /// The longest request body read, in bytes: a logout token of the ID
    /// token's size limit (64 KiB by default) and a few other parameters.
    public static let maxBodySize = 72 * 1024

    /// The status to answer with: 200 when the logout was done, 400 when not (§2.8).
    public let status: HTTPResponse.Status
    /// `Cache-Control: no-store` (§2.8), and the error body's content type.
    public let headers: HTTPFields
    /// Empty on success; on failure the JSON object §2.8 allows,
    /// `{"error":"invalid_request","error_description":"<the library's code>"}`:
    /// the code, never the message or anything of the token.
    public let body: Data

    /// The answer to a logout that was verified and done: 200, `Cache-Control: no-store`.
    public static let ok = BackChannelLogout(status: .ok, headers: [.cacheControl: "no-store"], body: Data())

    /// The answer to a request that was not verified, or whose logout the app
    /// could not do: 400 with §2.8's error object (the error's code as the
    /// description when it is an ``OAuth2Error``), `Cache-Control: no-store`.
    public static func failure(_ error: any Error) -> BackChannelLogout {
        let code = (error as? OAuth2Error)?.code.rawValue ?? "logout_failed"
        // The code is a stable identifier of ours or the provider's, with its
        // control characters stripped; escaped anyway, as JSON text.
        let escaped = OAuth2Error.sanitize(code).unicodeScalars.map { scalar -> String in
            scalar == "\"" || scalar == "\\" ? "\\" + String(scalar) : String(scalar)
        }.joined()
        let json = #"{"error":"invalid_request","error_description":"\#(escaped)"}"#
        return BackChannelLogout(
            status: .badRequest, headers: [.cacheControl: "no-store", .contentType: "application/json"], body: Data(json.utf8))
    }

    private init(status: HTTPResponse.Status, headers: HTTPFields, body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The `logout_token` of a POSTed `application/x-www-form-urlencoded`
    /// body (§2.5): exactly once, not empty. Other parameters are ignored, as
    /// §2.5 says parameters not understood must be.
    ///
    /// - Throws: ``OAuth2Error`` `response_too_large` over ``maxBodySize``;
    ///   `invalid_logout_token` for a body that is not UTF-8 form encoding, or
    ///   has no `logout_token`, an empty one, or more than one.
    package static func logoutToken(fromForm body: Data) throws(OAuth2Error) -> String {
        guard body.count <= maxBodySize else {
            throw OAuth2Error(code: .responseTooLarge, message: "the back-channel logout request is longer than \(maxBodySize) bytes")
        }
        guard let text = String(data: body, encoding: .utf8) else {
            throw OAuth2Error(code: .invalidLogoutToken, message: "the back-channel logout request is not UTF-8")
        }
        let pairs: [(String, String)]
        do throws(FormURLEncoding.Failure) {
            pairs = try FormURLEncoding.decode(text.trimmingSurroundingWhitespace[...])
        } catch {
            throw OAuth2Error(code: .invalidLogoutToken, message: "the back-channel logout request is malformed: \(error.reason)")
        }
        let tokens = pairs.filter { $0.0 == "logout_token" }.map(\.1)
        guard tokens.count == 1, let token = tokens.first, !token.isEmpty else {
            throw OAuth2Error(
                code: .invalidLogoutToken,
                message: tokens.count > 1
                    ? "the back-channel logout request has more than one logout_token"
                    : "the back-channel logout request has no logout_token")
        }
        return token
    }
}
