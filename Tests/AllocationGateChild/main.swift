// The allocation gate's child process (Tests/AllocationGateTests): runs each
// hot path many times after a warm-up and prints, as one JSON object, how
// many heap blocks the whole process allocated for a batch of them. A process of its own
// because the count is process-wide: in the test process, the tests running
// beside the gate would be counted too.
//
//     AllocationGateChild [ITERATIONS]
//
// Prints {"counting":false} when this build cannot count (a sanitizer owns malloc).
// Meant to run with SWIFT_DEBUG_ENABLE_TASK_SLAB_ALLOCATOR=0 (AllocationGateTests
// sets it): "asyncFramesCounted" says whether the runtime honoured it.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CAllocationCounter
@_spi(Benchmarks) import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// Answers the token endpoint with a token (and a refresh token) and
/// everything else as an API answers an authorized request, without
/// suspending: what is counted is the library's work, not a network's.
struct InstantTransport: HTTPTransport {
    let tokenURL: URL
    let token = HTTPTransportResponse(
        status: 200,
        headers: [.contentType: "application/json", .cacheControl: "no-store"],
        body: Data(
            #"{"access_token":"gate-access-token","token_type":"Bearer","expires_in":3600,"refresh_token":"gate-refresh-token"}"#.utf8)
    )
    let resource = HTTPTransportResponse(
        status: 200,
        headers: [.contentType: "application/json", .contentLength: "27", .connection: "keep-alive"],
        body: Data(#"{"id":42,"name":"resource"}"#.utf8)
    )

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        request.url == tokenURL ? token : resource
    }
}

/// A class instance: allocating one goes through the Swift runtime's
/// malloc, which shows whether the counter sees the runtime's allocations.
final class Probe {
    var value = 0
}

struct Measurement: Encodable {
    let metric: String
    let operations: Int
    let allocations: UInt64
    let bytes: UInt64
}

struct Output: Encodable {
    let counting: Bool
    /// Whether each async frame is a heap allocation of its own, as the gate
    /// wants, rather than carved out of the task's slab.
    let asyncFramesCounted: Bool
    let metrics: [Measurement]
}

func fail(_ message: String) -> Never {
    print("AllocationGateChild: \(message)")
    exit(1)
}

/// `body` `warmUp` times (first-use work: caches, libcurl's loading), then
/// `batches` batches of `iterations / batches`, counted; the batch that
/// allocated least is reported. A path that suspends sometimes allocates a
/// continuation more in some batches than in others (a refresh's single
/// flight, by thread timing); an allocation added to the path is in every
/// batch, so the least of them is exact and still catches it.
func measure(
    _ metric: String,
    iterations: Int,
    batches: Int = 5,
    warmUp: Int = 100,
    _ body: () async throws -> Void
) async throws -> Measurement {
    for _ in 0..<warmUp { try await body() }
    let perBatch = max(iterations / batches, 1)
    var least: (allocations: UInt64, bytes: UInt64)?
    for _ in 0..<batches {
        let allocationsBefore = allocation_counter_allocations()
        let bytesBefore = allocation_counter_bytes()
        for _ in 0..<perBatch { try await body() }
        let batch = (allocations: allocation_counter_allocations() - allocationsBefore, bytes: allocation_counter_bytes() - bytesBefore)
        if batch.allocations < least?.allocations ?? .max { least = batch }
    }
    return Measurement(metric: metric, operations: perBatch, allocations: least?.allocations ?? 0, bytes: least?.bytes ?? 0)
}

/// An async function the probe calls: at -Onone every call allocates the
/// callee's frame through the task allocator.
@inline(never)
func asyncFrame(_ value: Int) async -> Int {
    value &+ 1
}

/// Whether async frames come from malloc one by one: with the task slab
/// allocator on, a warmed-up task carves them out of a slab it already has
/// and 100 calls allocate nothing; with it off, each call allocates one.
func asyncFramesAreCounted() async -> Bool {
    var value = await asyncFrame(0)
    let before = allocation_counter_allocations()
    for _ in 0..<100 { value = await asyncFrame(value) }
    return allocation_counter_allocations() - before >= 100 && value > 100
}

/// Not isolated to the main actor, as the top-level code is: no operation
/// hops to it and back.
func run(iterations: Int) async throws -> [Measurement] {
    guard let tokenURL = URL(string: "https://idp.example.com/token"),
        let authorizeURL = URL(string: "https://idp.example.com/authorize"),
        let resourceURL = URL(string: "https://api.example.com/v1/resource")
    else { fail("bad URL") }
    let transport = InstantTransport(tokenURL: tokenURL)
    let configuration = try OAuth2Configuration(
        clientID: "gate-client",
        clientSecret: Secret("gate-secret"),
        authorizationEndpoint: authorizeURL,
        tokenEndpoint: tokenURL
    )
    let provider = try OAuth2Provider(configuration: configuration, transport: transport)
    let client = provider.client(account: "gate")
    _ = try await client.authenticate(.clientCredentials)
    let request = HTTPTransportRequest(url: resourceURL)
    let tokenResponse = transport.token
    let requestedAt = Date()
    let signedForLibcurl = HTTPTransportRequest(url: resourceURL, headers: [.authorization: "Bearer gate-access-token"])
    // A grant's key is made once; each DPoP-bound request makes a proof.
    let dpopKey = try DPoPKey.generate(algorithm: .es256)
    let dpopAccessToken = Secret("gate-access-token")
    let resourceText = resourceURL.absoluteString

    return [
        try await measure("signed-request", iterations: iterations) {
            let response = try await client.send(request)
            if response.status != .ok { fail("the signed request answered \(response.status.code)") }
        },
        try await measure("token-parse", iterations: iterations) {
            _ = try _OAuth2Benchmarks.parseTokenResponse(tokenResponse, requestedAt: requestedAt, requestedScopes: [])
        },
        try await measure("refresh", iterations: iterations) {
            _ = try await client.refreshAccessToken()
        },
        try await measure("transfer-preparation", iterations: iterations) {
            try _OAuth2Benchmarks.prepareTransfer(signedForLibcurl)
        },
        try await measure("dpop-proof", iterations: iterations) {
            let proof = try dpopKey.proof(method: "GET", url: resourceText, accessToken: dpopAccessToken, now: requestedAt)
            if proof.value.isEmpty { fail("the DPoP proof is empty") }
        },
    ]
}

let iterations = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 0 : 1000
guard iterations > 0 else { fail("ITERATIONS must be a positive number") }

// The counter is compiled in, and it sees what the Swift runtime allocates.
let before = allocation_counter_allocations()
let probe = Probe()
probe.value = iterations
let counting = allocation_counter_compiled_in() == 1 && allocation_counter_allocations() > before && probe.value > 0

var metrics: [Measurement] = []
var asyncFramesCounted = false
if counting {
    asyncFramesCounted = await asyncFramesAreCounted()
    metrics = try await run(iterations: iterations)
}
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys]
print(
    String(
        decoding: try encoder.encode(Output(counting: counting, asyncFramesCounted: asyncFramesCounted, metrics: metrics)), as: UTF8.self))
