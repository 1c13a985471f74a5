import Foundation
import Logging
import OAuth2
import OAuth2Testing
import Testing

/// Secrets used across the client tests; the redaction tests search every
/// captured log line and error for them.
enum Fixture {
    static let clientSecret = "s3cr3t-client-secret-value"
    static let accessToken = "at-0000000000000000000001"
    static let refreshToken = "rt-0000000000000000000001"
    static let tokenURL = URL(string: "https://idp.example/oauth/token")!
    static let authorizeURL = URL(string: "https://idp.example/oauth/authorize")!
    static let revokeURL = URL(string: "https://idp.example/oauth/revoke")!
    static let apiURL = URL(string: "https://api.example/v1/me")!
    static let redirectURI = URL(string: "https://app.example/callback")!

    static func configuration(
        clientAuthentication: ClientAuthentication? = nil,
        allowsPasswordGrant: Bool = false,
        defaultScopes: [String] = ["read"]
    ) throws -> OAuth2Configuration {
        try OAuth2Configuration(
            clientID: "client-1",
            clientSecret: Secret(clientSecret),
            authorizationEndpoint: authorizeURL,
            tokenEndpoint: tokenURL,
            revocationEndpoint: revokeURL,
            defaultScopes: defaultScopes,
            clientAuthentication: clientAuthentication,
            allowsPasswordGrant: allowsPasswordGrant
        )
    }

    static func tokenJSON(
        access: String = accessToken,
        refresh: String? = refreshToken,
        expiresIn: Int? = 3600,
        scope: String? = nil
    ) -> String {
        var fields = ["\"access_token\":\"\(access)\"", "\"token_type\":\"Bearer\""]
        if let refresh { fields.append("\"refresh_token\":\"\(refresh)\"") }
        if let expiresIn { fields.append("\"expires_in\":\(expiresIn)") }
        if let scope { fields.append("\"scope\":\"\(scope)\"") }
        return "{\(fields.joined(separator: ","))}"
    }

    static func token(
        access: String = accessToken,
        refresh: String? = refreshToken,
        expiresAt: Date?,
        scopes: [String] = ["read"]
    ) -> AccessToken {
        AccessToken(
            accessToken: Secret(access),
            expiresAt: expiresAt,
            refreshToken: refresh.map(Secret.init),
            scopes: scopes
        )
    }

    static func formFields(_ body: Data?) -> [String: String] {
        guard let body, let text = String(data: body, encoding: .utf8) else { return [:] }
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            let decode = { (s: String) in s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? s }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}

/// A provider wired to a canned transport, an in-memory store that counts
/// its calls, a manual clock and a log handler that captures every line at trace level.
struct ClientHarness {
    let transport = CannedTransport()
    let store = CountingTokenStore()
    let clock = ManualClock()
    let logs = CapturedLogs()
    let provider: OAuth2Provider

    /// - Parameter wrapStore: puts a store of the test's in front of ``store`` (one that fails, say).
    init(
        configuration: OAuth2Configuration? = nil, telemetry: OAuth2Telemetry = .global,
        wrapStore: ((CountingTokenStore<InMemoryTokenStore>) -> any TokenStore)? = nil
    ) throws {
        let logs = self.logs
        var logger = Logger(label: "test", factory: { _ in CapturingLogHandler(logs: logs) })
        logger.logLevel = .trace
        provider = try OAuth2Provider(
            configuration: configuration ?? Fixture.configuration(),
            store: wrapStore?(store) ?? store,
            transport: transport,
            clock: clock,
            logger: logger,
            telemetry: telemetry
        )
    }

    func client(_ account: String = "alice", delegate: (any OAuth2ClientDelegate)? = nil) -> OAuth2Client {
        provider.client(account: account, delegate: delegate)
    }

    /// Stores a token for `account` expiring `expiresIn` from the clock's now,
    /// bound to the provider's configuration as the client would have stored it.
    func seed(
        _ account: String = "alice", access: String = Fixture.accessToken, refresh: String? = Fixture.refreshToken, expiresIn: TimeInterval?
    ) async throws {
        var token = Fixture.token(access: access, refresh: refresh, expiresAt: expiresIn.map { clock.now().addingTimeInterval($0) })
        token.binding = provider.configuration.binding
        try await store.save(token, account: account)
    }

    var tokenRequests: [HTTPTransportRequest] { transport.requests(for: Fixture.tokenURL) }

    /// Answers every request: the token endpoint slowly (so concurrent
    /// callers pile up behind one refresh) with `access`/`refresh`, the API
    /// with 200 for exactly that access token and 401 otherwise.
    /// - Returns: the number of token requests seen so far.
    func serveSlowTokenEndpoint(access: String, refresh: String) -> @Sendable () -> Int {
        let count = LockedValue(0)
        transport.respond { request in
            if request.url == Fixture.tokenURL {
                count.withLock { $0 += 1 }
                try await Task.sleep(for: .milliseconds(50))
                return HTTPTransportResponse(
                    status: 200, headers: [.contentType: "application/json"],
                    body: Data(Fixture.tokenJSON(access: access, refresh: refresh).utf8))
            }
            return HTTPTransportResponse(status: request.authorization == "Bearer \(access)" ? 200 : 401)
        }
        return { count.withLock { $0 } }
    }
}

/// Log lines captured during a test, to check that none carries a secret.
final class CapturedLogs: Sendable {
    private let lines = LockedValue<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

struct CapturingLogHandler: LogHandler {
    let logs: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        logs.append("\(event.level) \(event.message) \(merged)")
    }
}

/// A delegate that records what it hears, and can run a reaction.
final class RecordingDelegate: OAuth2ClientDelegate, Sendable {
    private let recorded = LockedValue<[OAuth2Event]>([])
    let onNeedsAuthentication: (@Sendable (OAuth2Client) -> Void)?

    init(onNeedsAuthentication: (@Sendable (OAuth2Client) -> Void)? = nil) {
        self.onNeedsAuthentication = onNeedsAuthentication
    }

    var events: [OAuth2Event] { recorded.withLock { $0 } }

    func oauth2ClientNeedsAuthentication(_ client: OAuth2Client) {
        recorded.withLock { $0.append(.needsAuthentication) }
        onNeedsAuthentication?(client)
    }

    func oauth2Client(_ client: OAuth2Client, didGetAccessToken token: AccessToken) {
        recorded.withLock { $0.append(.gotAccessToken(token)) }
    }

    func oauth2Client(_ client: OAuth2Client, didRefreshAccessToken token: AccessToken) {
        recorded.withLock { $0.append(.refreshedAccessToken(token)) }
    }

    func oauth2Client(_ client: OAuth2Client, didLoseAccessTokenWithError error: OAuth2Error?) {
        recorded.withLock { $0.append(.lostAccessToken(error)) }
    }

    func oauth2Client(_ client: OAuth2Client, didFailToGetAccessTokenWithError error: OAuth2Error) {
        recorded.withLock { $0.append(.failedToGetAccessToken(error)) }
    }

    func oauth2Client(_ client: OAuth2Client, didFailToStoreAccessTokenWithError error: OAuth2Error) {
        recorded.withLock { $0.append(.failedToStoreAccessToken(error)) }
    }
}

/// A store in front of another whose saves fail while ``failsSaves`` is
/// set: a full disk, a database timeout.
final class FlakyTokenStore: TokenStore {
    let inner: any TokenStore
    private let failing = LockedValue(false)
    private let failedSaves = LockedValue(0)

    init(_ inner: any TokenStore) {
        self.inner = inner
    }

    var failsSaves: Bool {
        get { failing.withLock { $0 } }
        set { failing.withLock { $0 = newValue } }
    }

    var failedSaveCount: Int { failedSaves.withLock { $0 } }

    func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        try await inner.load(account: account)
    }

    func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
        if failsSaves {
            failedSaves.withLock { $0 += 1 }
            throw OAuth2Error(code: .storeError, message: "no space left on device (injected)")
        }
        try await inner.save(token, account: account)
    }

    func delete(account: String) async throws(OAuth2Error) {
        try await inner.delete(account: account)
    }

    func withLock<Result: Sendable>(
        account: String, timeout: Duration, _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result {
        try await inner.withLock(account: account, timeout: timeout, body)
    }
}

extension HTTPTransportRequest {
    var authorization: String? { headers[.authorization] }
}

/// Runs `body` and returns the OAuth2Error it throws, failing the test when it throws none.
func oauth2Error(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> OAuth2Error? {
    do {
        try await body()
        Issue.record("expected an OAuth2Error, got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as OAuth2Error {
        return error
    } catch {
        Issue.record("expected an OAuth2Error, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
