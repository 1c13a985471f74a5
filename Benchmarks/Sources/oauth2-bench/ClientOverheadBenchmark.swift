#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BenchCore
import BenchReport
import OAuth2

/// The framework's own cost per signed request, without a network: `send`
/// through a client whose transport answers at once with a fixed 200.
///
/// What this measures is what `OAuth2Client.send` adds on top of any
/// transport (policy check, token decision, signing, the 401 analysis), in
/// one thread, with no wake-ups: the part of the gap to raw libcurl that
/// the client code owns.
///
/// With `tokenBytes`, the access token is that long (a JWT access token
/// runs to a kilobyte or more) instead of the benchmark's 18 bytes. With a
/// DPoP target the token is DPoP-bound: every `send` makes a proof.
enum ClientOverheadBenchmark {
    static func run(target: BenchTarget, iterations: Int, tokenBytes: Int? = nil) async throws -> Report {
        let transport = InstantTransport(tokenURL: target.tokenURL, tokenBytes: tokenBytes, tokenType: target.dpop ? "DPoP" : "Bearer")
        let client = try target.provider(transport: transport).client(account: "overhead")
        _ = try await client.authenticate(.clientCredentials)
        let request = target.resourceRequest
        let batch = ParsingBenchmark.batch
        let batches = Swift.max(iterations / batch, 1)
        var latencies = Latencies(capacity: batches)
        var errors = 0

        let cpuStart = ProcessMetrics.cpuSeconds()
        let start = ProcessMetrics.nanoseconds()
        for _ in 0..<batches {
            let batchStart = ProcessMetrics.nanoseconds()
            for _ in 0..<batch {
                let response = try await client.send(request)
                if response.status != 200 { errors += 1 }
            }
            latencies.record((ProcessMetrics.nanoseconds() - batchStart) / UInt64(batch))
        }
        let seconds = Double(ProcessMetrics.nanoseconds() - start) / 1e9
        return Report(
            scenario: (tokenBytes == nil ? "send-in-process" : "send-in-process-long-token") + (target.dpop ? "-dpop" : ""),
            requests: batches * batch,
            concurrency: 1,
            errors: errors,
            seconds: seconds,
            latencies: latencies,
            cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart
        )
    }
}

/// Answers the token endpoint with a token and everything else with the
/// response nginx gives an authorized request, without suspending.
struct InstantTransport: HTTPTransport {
    let tokenURL: URL
    private let token: HTTPTransportResponse

    /// `tokenBytes`: the access token's length, letters with a dot every 80
    /// (as a JWT's parts are joined); `nil` for `bench-access-token`.
    init(tokenURL: URL, tokenBytes: Int? = nil, tokenType: String = "Bearer") {
        self.tokenURL = tokenURL
        var accessToken = "bench-access-token"
        if let tokenBytes {
            let bytes = (0..<tokenBytes).map { index -> UInt8 in index % 80 == 79 ? UInt8(ascii: ".") : UInt8(97 + index % 26) }
            accessToken = String(decoding: bytes, as: UTF8.self)
        }
        token = HTTPTransportResponse(
            status: 200,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: Data(#"{"access_token":"\#(accessToken)","token_type":"\#(tokenType)","expires_in":3600}"#.utf8)
        )
    }
    private static let resource = HTTPTransportResponse(
        status: 200,
        headers: [
            .server: "nginx", .date: "Sat, 21 Nov 2026 06:51:19 GMT", .contentType: "application/json",
            .contentLength: "27", .connection: "keep-alive",
        ],
        body: Data(#"{"id":42,"name":"resource"}"#.utf8)
    )

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        request.url == tokenURL ? token : Self.resource
    }
}
