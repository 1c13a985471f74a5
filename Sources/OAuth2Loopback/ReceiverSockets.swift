import OAuth2

/// Binds every address of a ``LoopbackEndpoint`` on one port.
enum ReceiverSockets {
    /// How many ephemeral ports are tried when the second address finds the first one's port taken.
    static let ephemeralAttempts = 16

    /// The listening sockets, in the endpoint's order, and their common port.
    ///
    /// With an ephemeral port the first address picks it and the others take
    /// the same; when one of them finds it taken, all are closed and another
    /// port is tried. On a fixed port, a taken address is an error even for
    /// ::1 beside 127.0.0.1: a browser resolving `localhost` could otherwise
    /// hand the code to whoever holds it.
    ///
    /// - Throws: `transport_error` naming the address and the reason.
    static func bind(_ endpoint: LoopbackEndpoint) throws(OAuth2Error) -> (listeners: [Int32], port: UInt16) {
        var attempt = 1
        while true {
            switch bindAll(endpoint) {
            case .success(let bound):
                return bound
            case .failure(let failure):
                let retry = endpoint.port == 0 && failure.secondary && failure.reason.isAddressInUse && attempt < ephemeralAttempts
                guard retry else {
                    let port = endpoint.port == 0 ? "an ephemeral port" : "port \(endpoint.port)"
                    throw OAuth2Error(
                        code: .transportError,
                        message: "cannot listen on \(failure.address) \(port): \(failure.reason)"
                    )
                }
                attempt += 1
            }
        }
    }

    /// Why binding failed, and where.
    private struct BindFailure: Error {
        let address: LoopbackEndpoint.Address
        let reason: Socket.Failure
        /// Whether an address after the first failed (its port was the first one's pick).
        let secondary: Bool
    }

    private static func bindAll(_ endpoint: LoopbackEndpoint) -> Result<(listeners: [Int32], port: UInt16), BindFailure> {
        var listeners: [Int32] = []
        var port = endpoint.port
        for address in endpoint.addresses {
            switch Socket.makeListener(address, port: port) {
            case .success(let bound):
                listeners.append(bound.fd)
                port = bound.port
            case .failure(let reason):
                if address == .ipv6Loopback && endpoint.ipv6IsOptional && reason.isAddressUnavailable {
                    continue
                }
                listeners.forEach(Socket.close)
                return .failure(BindFailure(address: address, reason: reason, secondary: !listeners.isEmpty))
            }
        }
        return .success((listeners, port))
    }
}
