import BenchCore
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The start row of `make bench` for the library alone: one client-credentials
// token, one signed GET, exit. It links OAuth2 and nothing else (oauth2-bench
// also links PostgresNIO and SwiftNIO for its store rows).
//
//     oauth2-start BASE_URL
guard CommandLine.arguments.count == 2 else {
    print("usage: oauth2-start BASE_URL")
    exit(2)
}
do {
    let target = try BenchTarget(baseURL: CommandLine.arguments[1])
    let transport = CurlTransport()
    let client = try target.provider(transport: transport).client(account: "start")
    _ = try await client.authenticate(.clientCredentials)
    let response = try await client.send(target.resourceRequest)
    await transport.shutdown()
    guard response.status == .ok else {
        print("oauth2-start: the signed GET answered \(response.status.code)")
        exit(1)
    }
} catch {
    print("oauth2-start: \(error)")
    exit(1)
}
