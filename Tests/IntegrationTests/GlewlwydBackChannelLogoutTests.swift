import Foundation
import LoopbackSockets
import OAuth2
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Back-Channel Logout from a provider that is not ours: glewlwyd 2.7.5's
/// `oidclogout` instance (Tests/Glewlwyd/README.md), which implements draft 06.
/// The library signs in, ends the session at glewlwyd's `end_session` with
/// ``OAuth2Client/endSessionURL(postLogoutRedirectURI:state:additionalParameters:)``,
/// and glewlwyd POSTs its logout token to this test's route, which answers
/// what ``OAuth2Provider/verifyLogoutRequest(body:)`` says of it.
@Suite(
    .serialized,
    .enabled(
        if: GlewlwydEnvironment.isConfigured, "needs glewlwyd: `make test` starts it (scripts/glewlwyd.sh) and sets OAUTH2_IT_GLEWLWYD"))
struct GlewlwydBackChannelLogoutTests {
    /// glewlwyd's draft-06 token names the session (the ID token's `sid`) and
    /// the user (`sub`), is signed with the ID token's key and has a `jti`, but
    /// has no `exp`, which Back-Channel Logout 1.0 §2.4 makes REQUIRED: the
    /// library refuses it (`invalid_logout_token`) and the route answers 400.
    /// Since it was refused, its `jti` was not recorded: the same body again is
    /// refused for the same reason, not as a replay.
    @Test func glewlwydsLogoutTokenWithoutExpIsRefused() async throws {
        let run = try GlewlwydEnvironment.load()
        let configuration = try await run.configuration(plugin: "oidclogout", client: "logout")
        let transport = CurlTransport()
        let provider = try OAuth2Provider(configuration: configuration, transport: transport)
        let route = try BackChannelLogoutRoute(provider: provider)
        defer { route.stop() }
        try await run.setBackChannelLogoutURI(route.url)

        let client = provider.client(account: "alice")
        let pending = try await client.authorizationURL(redirectURI: URL(string: run.redirectURI)!, scopes: ["openid"])
        let token = try await client.authenticate(.authorizationCode(redirect: try await run.browse(pending.url.absoluteString)))
        let idToken = try #require(token.idToken)
        let sessionID = try #require(idToken.sessionID, "oidclogout has session management: its ID tokens carry sid")

        let endSession = try #require(try await client.endSessionURL())
        #expect(try await run.endSession(endSession.absoluteString) == "ended \(sessionID)")
        let (body, outcome, answer) = try #require(
            try await route.firstRequest(), "glewlwyd sent no back-channel logout within 20 s (see its log)")
        await transport.shutdown()

        // What glewlwyd sent, read without verification.
        let form = String(decoding: body, as: UTF8.self)
        let raw = try #require(form.split(separator: "&").first { $0.hasPrefix("logout_token=") }?.dropFirst("logout_token=".count))
        let jws = raw.removingPercentEncoding ?? String(raw)
        let header = try GlewlwydEnvironment.header(of: jws)
        let claims = try GlewlwydEnvironment.payload(of: jws)
        #expect(header["typ"] as? String == "JWT")
        #expect(header["alg"] as? String == "ES256")
        #expect(Set(claims.keys) == ["iss", "aud", "sub", "iat", "jti", "sid", "events"])
        #expect(claims["sid"] as? String == sessionID)
        #expect(claims["sub"] as? String == idToken.subject)
        #expect(claims["iss"] as? String == configuration.issuer)

        // What the library made of it, and what the route answered.
        guard case .failure(let error) = outcome else {
            Issue.record("the library accepted a logout token without exp")
            return
        }
        #expect(error.code == .invalidLogoutToken)
        #expect(error.message.contains("exp"), "\(error.message)")
        #expect(answer.status == .badRequest)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("invalid_logout_token"))

        do throws(OAuth2Error) {
            _ = try await provider.verifyLogoutRequest(body: body)
            Issue.record("the same body was accepted the second time")
        } catch {
            #expect(error.code == .invalidLogoutToken, "refused again for its missing exp, not as a replay")
        }
    }
}

extension GlewlwydEnvironment {
    /// Points the client `logout`'s `backchannel_logout_uri` at `url` (env.json's admin command).
    func setBackChannelLogoutURI(_ url: String) async throws {
        let command = try #require(environment["set_backchannel_logout_uri"] as? [String])
        let result = try await Subprocess.run(
            command[0], Array(command.dropFirst()) + [url], environment: ProcessInfo.processInfo.environment)
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// Ends the session of an `end_session` URL as glewlwyd's login page does; returns browser.py's line.
    func endSession(_ url: String) async throws -> String {
        let browser = try #require(environment["browser"] as? [String])
        let result = try await Subprocess.run(
            browser[0], Array(browser.dropFirst()) + ["--end-session", url, "--username", "alice", "--password", try password],
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A JWT's protected header, unverified.
    static func header(of jwt: String) throws -> [String: Any] {
        let parts = jwt.split(separator: ".")
        try #require(parts.count == 3)
        var base64 = parts[0].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
