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
        let route = try LogoutRoute(provider: provider)
        defer { route.stop() }
        try await run.setBackChannelLogoutURI(route.url)

        let client = provider.client(account: "alice")
        let pending = try await client.authorizationURL(redirectURI: URL(string: run.redirectURI)!, scopes: ["openid"])
        let token = try await client.authenticate(.authorizationCode(redirect: try await run.browse(pending.url.absoluteString)))
        let idToken = try #require(token.idToken)
        let sessionID = try #require(idToken.sessionID, "oidclogout has session management: its ID tokens carry sid")

        let endSession = try #require(try await client.endSessionURL())
        #expect(try await run.endSession(endSession.absoluteString) == "ended \(sessionID)")
        let (body, outcome, answer) = try await route.firstRequest()
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

/// The app's `backchannel_logout_uri`: takes one POST on 127.0.0.1, answers
/// with ``BackChannelLogout`` what ``OAuth2Provider/verifyLogoutRequest(body:)``
/// said, and keeps the body, the outcome and the answer for the test.
private final class LogoutRoute: @unchecked Sendable {
    // @unchecked: `listener` is set once, in init; `received` is under `lock`.
    typealias Request = (body: Data, outcome: Result<LogoutToken, OAuth2Error>, answer: BackChannelLogout)

    private var listener: LoopbackListener!
    private let provider: OAuth2Provider
    private let lock = NSLock()
    private var received: [Request] = []

    var url: String { "http://127.0.0.1:\(listener.port)/backchannel-logout" }

    init(provider: OAuth2Provider) throws {
        self.provider = provider
        listener = try LoopbackListener { [self] connection in serve(connection) }
    }

    func stop() { listener.stop() }

    /// The first request, waited for up to 20 s (glewlwyd sends from a thread of its own).
    func firstRequest() async throws -> Request {
        for _ in 0..<200 {
            if let first = lock.withLock({ received.first }) { return first }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProviderError(description: "glewlwyd sent no back-channel logout within 20 s (see its log)")
    }

    private func serve(_ connection: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let body = readBody(connection) else { return }
        let done = DispatchSemaphore(value: 0)
        let box = OutcomeBox()
        let provider = self.provider
        Task {
            do throws(OAuth2Error) {
                box.value = .success(try await provider.verifyLogoutRequest(body: body))
            } catch {
                box.value = .failure(error)
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(20)) == .success, let outcome = box.value else { return }
        let answer: BackChannelLogout
        switch outcome {
        case .success: answer = .ok
        case .failure(let error): answer = .failure(error)
        }
        lock.withLock { received.append((body, outcome, answer)) }
        var text = "HTTP/1.1 \(answer.status.code) \(answer.status.reasonPhrase)\r\n"
        for field in answer.headers { text += "\(field.name.rawName): \(field.value)\r\n" }
        text += "Content-Length: \(answer.body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Data(text.utf8) + answer.body
        _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The body of one request, by its Content-Length (bounded).
    private func readBody(_ connection: Int32) -> Data? {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let separator = Data("\r\n\r\n".utf8)
        while received.range(of: separator) == nil {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0, received.count < 16 * 1024 else { return nil }
            received.append(contentsOf: buffer[0..<count])
        }
        guard let end = received.range(of: separator) else { return nil }
        let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
        let length =
            head.split(separator: "\r\n").compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        guard length <= BackChannelLogout.maxBodySize else { return nil }
        var body = Data(received[end.upperBound...])
        while body.count < length {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            body.append(contentsOf: buffer[0..<count])
        }
        return body.prefix(length)
    }

    private final class OutcomeBox: @unchecked Sendable {
        // @unchecked: written once by the Task before `done` is signalled, read after.
        var value: Result<LogoutToken, OAuth2Error>?
    }
}
