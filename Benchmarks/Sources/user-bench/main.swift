#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The benchmark a user would write: the public API only, nothing of
// BenchCore or BenchReport, no clock of its own. `make bench` times the whole
// process with hyperfine (start-up, the token, the requests, the exit), beside
// the C baseline and the Go program given the same arguments, so the row says
// what an application pays, not only the requests/s inside a warm process.
//
//     user-bench sequential BASE_URL N
//     user-bench concurrent BASE_URL N CALLERS
//
// Exits 1 when an answer is not 200.

func fail(_ message: String) -> Never {
    print("user-bench: \(message)")
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, let requests = Int(arguments[3]), requests > 0,
    arguments[1] == "sequential" || (arguments[1] == "concurrent" && arguments.count == 5)
else {
    print("usage: user-bench sequential BASE_URL N | user-bench concurrent BASE_URL N CALLERS")
    exit(2)
}
let callers = arguments[1] == "concurrent" ? Int(arguments[4]) ?? 0 : 1
guard callers > 0 else { fail("CALLERS must be a positive number") }
let base = arguments[2].hasSuffix("/") ? String(arguments[2].dropLast()) : arguments[2]
guard let tokenURL = URL(string: base + "/token"), let authorizeURL = URL(string: base + "/authorize"),
    let resourceURL = URL(string: base + "/api/resource")
else { fail("not a URL: \(arguments[2])") }

let transport = CurlTransport()
do {
    let configuration = try OAuth2Configuration(
        clientID: "bench-client",
        clientSecret: Secret("bench-secret"),
        authorizationEndpoint: authorizeURL,
        tokenEndpoint: tokenURL
    )
    let provider = try OAuth2Provider(configuration: configuration, transport: transport)
    let client = provider.client(account: "user")
    _ = try await client.authenticate(.clientCredentials)
    let failures = try await withThrowingTaskGroup(of: Int.self) { group in
        for caller in 0..<callers {
            // Each caller sends its share one after the other, as Go's and C's callers do.
            let share = requests / callers + (caller < requests % callers ? 1 : 0)
            group.addTask {
                var failures = 0
                for _ in 0..<share {
                    let response = try await client.send(HTTPTransportRequest(url: resourceURL))
                    if response.status != .ok { failures += 1 }
                }
                return failures
            }
        }
        var failures = 0
        for try await callerFailures in group { failures += callerFailures }
        return failures
    }
    await transport.shutdown()
    if failures > 0 { fail("\(failures) of \(requests) answers were not 200") }
} catch {
    await transport.shutdown()
    fail("\(error)")
}
