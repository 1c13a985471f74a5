/// Sends every request with ``HTTPTransportRequest/connectsOnlyToPublicAddresses``
/// set, through the transport it wraps: what ``DiscoveryRules/connectsOnlyToPublicAddresses``
/// and ``OAuth2Configuration/connectsOnlyToPublicAddresses`` put in front of
/// the app's transport, so that no request of theirs can leave it out.
struct PublicAddressTransport: HTTPTransport {
    let base: any HTTPTransport

    /// `transport` itself when `enabled` is false, else wrapped (once).
    static func wrapping(_ transport: any HTTPTransport, if enabled: Bool) -> any HTTPTransport {
        guard enabled, !(transport is PublicAddressTransport) else { return transport }
        return PublicAddressTransport(base: transport)
    }

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        var request = request
        request.connectsOnlyToPublicAddresses = true
        return try await base.send(request)
    }
}
