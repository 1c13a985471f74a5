#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BenchCore
import BenchReport
@_spi(Benchmarks) import OAuth2

/// Scenario 4: token responses and redirect URLs parsed per second, in
/// process, no network, through ``_OAuth2Benchmarks`` (the very parsers a
/// grant and the authorization code grant run).
///
/// Latency percentiles are per parse, from batches of `batch` parses (timing
/// each parse alone would measure the clock).
enum ParsingBenchmark {
    static let batch = 100

    /// A typical token response: a JWT-sized access token, a refresh token, a scope and one extra field.
    ///
    /// Made afresh rather than kept in a `static let`: LeakSanitizer cannot
    /// follow Swift's tagged pointers out of globals and would report it.
    static func makeTokenResponse() -> HTTPTransportResponse {
        let body =
            #"{"access_token":"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJiZW5jaC1jbGllbnQiLCJzY29wZSI6InJlYWQgd3JpdGUiLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6MTcwMDAwMzYwMH0.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmUtc2lnbmF0dXJl","token_type":"Bearer","expires_in":3600,"refresh_token":"def50200a1b2c3d4e5f60718293a4b5c6d7e8f9","scope":"read write","session_state":"4d7a1c2e-9f3b-4a5d-8e6f-0a1b2c3d4e5f"}"#
        return HTTPTransportResponse(
            status: 200,
            headers: [.contentType: "application/json;charset=UTF-8", .cacheControl: "no-store", HTTPField.Name("Pragma")!: "no-cache"],
            body: Data(body.utf8)
        )
    }

    static func run(target: BenchTarget, iterations: Int) async throws -> [Report] {
        [
            try runTokenResponses(iterations: iterations), try await runRedirects(target: target, iterations: iterations),
            try runTransfers(target: target, iterations: iterations), try runDPoPProofs(target: target, iterations: iterations),
        ]
    }

    /// One DPoP proof (RFC 9449) for the signed GET of the request
    /// scenarios, as a DPoP-bound request makes it: ES256 signature, `ath`
    /// of a JWT-sized access token, a fresh `jti`. The key is made once, as
    /// a grant makes it once.
    static func runDPoPProofs(target: BenchTarget, iterations: Int) throws -> Report {
        let key = try DPoPKey.generate(algorithm: .es256)
        let url = target.resourceRequest.url.absoluteString
        let accessToken = Secret("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJiZW5jaC1jbGllbnQifQ.c2lnbmF0dXJl")
        let now = Date()
        return try measure(scenario: "dpop-proof", iterations: iterations) { () throws(OAuth2Error) in
            _ = try key._benchmarkProof(method: "GET", url: url, accessToken: accessToken, now: now)
        }
    }

    static func runTokenResponses(iterations: Int) throws -> Report {
        let response = makeTokenResponse()
        let requestedAt = Date()
        return try measure(scenario: "parse-token-response", iterations: iterations) { () throws(OAuth2Error) in
            _ = try _OAuth2Benchmarks.parseTokenResponse(response, requestedAt: requestedAt, requestedScopes: ["read"])
        }
    }

    static func runRedirects(target: BenchTarget, iterations: Int) async throws -> Report {
        // A pending authorization made the public way; validating does not use up its state.
        let client = try target.provider(transport: CannedNothing()).client(account: "parse")
        guard let redirectURI = URL(string: "http://127.0.0.1:8765/callback") else {
            throw BenchError("bad redirect URI")
        }
        let pending = try await client.authorizationURL(redirectURI: redirectURI, scopes: ["read", "write"])
        let redirect =
            "http://127.0.0.1:8765/callback?code=SplxlOBeZQQYbYS6WxSbIA-gHk3Ax8f9Lp2Rb6Ls&state=\(pending.state)&iss=https%3A%2F%2Fidp.example.com"
        return try measure(scenario: "parse-redirect", iterations: iterations) { () throws(OAuth2Error) in
            _ = try _OAuth2Benchmarks.validateRedirect(redirect, pending: pending)
        }
    }

    /// The signed GET of the request scenarios, as the transport prepares it for libcurl.
    static func runTransfers(target: BenchTarget, iterations: Int) throws -> Report {
        var request = target.resourceRequest
        request.headers[.authorization] = "Bearer eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJiZW5jaC1jbGllbnQifQ.c2lnbmF0dXJl"
        return try measure(scenario: "prepare-transfer", iterations: iterations) { () throws(HTTPTransportError) in
            try _OAuth2Benchmarks.prepareTransfer(request)
        }
    }

    static func measure<Failure: Error>(scenario: String, iterations: Int, _ body: () throws(Failure) -> Void) throws -> Report {
        let cpuStart = ProcessMetrics.cpuSeconds()
        let batches = Swift.max(iterations / batch, 1)
        var latencies = Latencies(capacity: batches)
        let start = ProcessMetrics.nanoseconds()
        for _ in 0..<batches {
            let batchStart = ProcessMetrics.nanoseconds()
            for _ in 0..<batch {
                try body()
            }
            latencies.record((ProcessMetrics.nanoseconds() - batchStart) / UInt64(batch))
        }
        let seconds = Double(ProcessMetrics.nanoseconds() - start) / 1e9
        return Report(
            scenario: scenario,
            requests: batches * batch,
            concurrency: 1,
            seconds: seconds,
            latencies: latencies,
            cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart
        )
    }
}

/// A transport for a client that never sends: the parsing benchmark only asks it for an authorization URL.
private struct CannedNothing: HTTPTransport {
    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        throw BenchError("the parsing benchmark sends nothing")
    }
}
