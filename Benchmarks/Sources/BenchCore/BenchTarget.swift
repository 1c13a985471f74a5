#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import OAuth2

/// The server under test: the base URL of Benchmarks/nginx's configuration
/// and the client that talks to it.
package struct BenchTarget {
    package let baseURL: URL
    package let tokenURL: URL
    package let resourceURL: URL
    /// Whether the grant's tokens are DPoP-bound (nginx's `/dpop/token` and
    /// `/api/dpop/resource`): every GET then carries a proof.
    package let dpop: Bool

    package init(baseURL text: String, dpop: Bool = false) throws(BenchError) {
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard let base = URL(string: trimmed),
            let token = URL(string: trimmed + (dpop ? "/dpop/token" : "/token")),
            let resource = URL(string: trimmed + (dpop ? "/api/dpop/resource" : "/api/resource"))
        else {
            throw BenchError("not a URL: \(text)")
        }
        baseURL = base
        tokenURL = token
        resourceURL = resource
        self.dpop = dpop
    }

    /// The configuration of the benchmark's confidential client (client_secret_basic).
    package func configuration() throws -> OAuth2Configuration {
        var configuration = try OAuth2Configuration(
            clientID: "bench-client",
            clientSecret: Secret("bench-secret"),
            authorizationEndpoint: baseURL.appendingPathComponent("authorize"),
            tokenEndpoint: tokenURL
        )
        if dpop { configuration.dpop = DPoPSettings() }
        return configuration
    }

    /// A provider over `transport` (the caller shuts the transport down).
    package func provider(
        transport: any HTTPTransport,
        clock: any OAuth2Clock = SystemClock(),
        store: any TokenStore = InMemoryTokenStore()
    ) throws -> OAuth2Provider {
        try OAuth2Provider(configuration: configuration(), store: store, transport: transport, clock: clock)
    }

    /// The signed request every scenario sends.
    package var resourceRequest: HTTPTransportRequest {
        HTTPTransportRequest(method: .get, url: resourceURL)
    }
}

/// A benchmark that could not run, with the reason.
package struct BenchError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
