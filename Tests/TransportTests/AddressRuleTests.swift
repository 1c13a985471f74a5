import Foundation
import LoopbackSockets
import OAuth2
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension CurlTransportTests {
    /// `HTTPTransportRequest.connectsOnlyToPublicAddresses`, checked on the
    /// address libcurl connects to (after DNS), and the close-on-exec sockets
    /// the same callback opens. Every server here is on loopback, an internal
    /// address: what the rule must refuse.
    @Suite struct AddressRule {
        @Test func aLoopbackAddressIsRefusedAndNothingReachesTheServer() async throws {
            let server = try currentServer()
            let tag = uniqueTag()
            var request = taggedRequest(try server.url("/echo/internal"), tag: tag)
            request.connectsOnlyToPublicAddresses = true
            let (error, stats) = try await withTransport { transport in
                let error = await #expect(throws: HTTPTransportError.internalAddress) { try await transport.send(request) }
                // The same request without the rule goes through, on the same transport.
                var allowed = request
                allowed.connectsOnlyToPublicAddresses = false
                #expect(try await transport.send(allowed).bodyText == "internal")
                return (error, try await server.stats(tag: tag, via: transport))
            }
            #expect(error?.message.contains("127.0.0.1 resolved to 127.0.0.1, an internal address") == true)
            #expect(stats.requests == 1, "only the request without the rule reached the server")
        }

        /// What a string check of the URL cannot see: a name whose addresses
        /// are internal. `localhost` stands for any such name here (the
        /// transport reads no name; it sees what the name resolved to).
        @Test func aNameThatResolvesToAnInternalAddressIsRefused() async throws {
            let server = try currentServer()
            let url = try #require(
                URL(string: try server.url("/echo/by-name").absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")))
            var request = HTTPTransportRequest(url: url)
            request.connectsOnlyToPublicAddresses = true
            let error = try await withTransport { transport in
                await #expect(throws: HTTPTransportError.internalAddress) { try await transport.send(request) }
            }
            let message = try #require(error?.message)
            #expect(message.contains("localhost resolved to 127.0.0.1") || message.contains("localhost resolved to ::1"), "\(message)")
        }

        /// A handle that carried a checked transfer is reset before an
        /// unchecked one, and the other way round: the rule never carries over.
        @Test func checkedAndUncheckedRequestsAlternateOnOneTransport() async throws {
            let server = try currentServer()
            try await withTransport(CurlTransport.Configuration(maxConnectionsPerHost: 1)) { transport in
                for index in 0..<20 {
                    var request = HTTPTransportRequest(url: try server.url("/echo/\(index)"))
                    request.connectsOnlyToPublicAddresses = index.isMultiple(of: 2)
                    if request.connectsOnlyToPublicAddresses {
                        await #expect(throws: HTTPTransportError.internalAddress) { try await transport.send(request) }
                    } else {
                        #expect(try await transport.send(request).bodyText == "\(index)")
                    }
                }
            }
        }

        /// Through a proxy the proxy resolves the name, and the request goes
        /// to it even for a host `no_proxy` names (which would otherwise be
        /// reached directly, unchecked). The proxy itself is on loopback and
        /// still used: it is the app's own choice, not the request's target.
        @Test func throughAProxyTheProxyResolvesAndNoProxyIsOverruled() async {
            await #expect(processExitsWith: .success) {
                let proxy = try TestServer.start()
                defer { proxy.stop() }
                setenv("http_proxy", try proxy.url("/").absoluteString, 1)
                setenv("no_proxy", "api.example.invalid", 1)
                setenv("NO_PROXY", "api.example.invalid", 1)
                let transport = CurlTransport()
                var request = HTTPTransportRequest(url: URL(string: "http://api.example.invalid/echo/via-proxy")!)
                request.connectsOnlyToPublicAddresses = true
                let response = try await transport.send(request)
                await transport.shutdown()
                guard response.status == 200, response.bodyText == "via-proxy" else { exit(1) }
            }
        }

        /// libcurl 7.88 opens its sockets without close-on-exec; a program the
        /// app starts would inherit every connection open at that moment.
        @Test func theTransportsConnectionsAreCloseOnExec() async throws {
            let server = try currentServer()
            let port = try #require(server.url("/").port)
            let flags = try await withTransport { transport in
                let response = try await transport.send(HTTPTransportRequest(url: try server.url("/echo/kept")))
                #expect(response.bodyText == "kept")
                // The connection stays in libcurl's cache (HTTP/1.1 keep-alive) while the transport lives.
                return Self.descriptorFlags(connectedToPort: port)
            }
            #expect(!flags.isEmpty, "the kept connection is among the process's descriptors")
            #expect(flags.allSatisfy { $0 & FD_CLOEXEC != 0 })
        }

        /// FD flags of each of this process's TCP sockets whose peer is 127.0.0.1:`port`.
        static func descriptorFlags(connectedToPort port: Int) -> [Int32] {
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
            return entries.compactMap(Int32.init).compactMap { fd -> Int32? in
                var address = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let named = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
                }
                guard named, address.sin_family == sa_family_t(AF_INET), Int(UInt16(bigEndian: address.sin_port)) == port else {
                    return nil
                }
                let flags = fcntl(fd, F_GETFD)
                return flags >= 0 ? flags : nil
            }
        }
    }
}

/// The rule as the library sets it: from ``DiscoveryRules`` and
/// ``OAuth2Configuration``, on every request made under them. A listener on
/// loopback counts the connections that reach it.
@Suite struct AddressRuleInTheLibraryTests {
    /// Accepts connections, counts them, and answers each with a 404.
    final class CountingListener: @unchecked Sendable {
        // @unchecked: `count` is under `lock`; `listener` is set once.
        private let lock = NSLock()
        private var count = 0
        private var listener: LoopbackListener!

        var connections: Int { lock.withLock { count } }
        var base: String { "http://127.0.0.1:\(listener.port)" }

        init() throws {
            listener = try LoopbackListener { [self] connection in
                lock.withLock { count += 1 }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = recv(connection, &buffer, buffer.count, 0)
                let answer = Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = send(connection, answer, answer.count, Int32(MSG_NOSIGNAL))
            }
        }

        func stop() { listener.stop() }
    }

    @Test func discoveryUnderTheRuleConnectsToNoInternalAddress() async throws {
        let listener = try CountingListener()
        defer { listener.stop() }
        let resource = try #require(URL(string: listener.base + "/mcp"))
        let error = try await withTransport { transport in
            // Without the rule the loopback resource is asked (and answers 404).
            await #expect(throws: OAuth2Error.self) {
                try await ProtectedResourceMetadata.fetch(for: resource, transport: transport)
            }
            #expect(listener.connections >= 1)
            let before = listener.connections
            let error = await #expect(throws: OAuth2Error.self) {
                try await ProtectedResourceMetadata.fetch(
                    for: resource, rules: DiscoveryRules(connectsOnlyToPublicAddresses: true), transport: transport)
            }
            #expect(listener.connections == before, "nothing reached the internal address")
            return error
        }
        #expect(error?.code == .insecureEndpoint)
    }

    @Test func aProviderUnderTheRuleSendsNoTokenRequestToAnInternalAddress() async throws {
        let listener = try CountingListener()
        defer { listener.stop() }
        var configuration = try OAuth2Configuration(
            clientID: "client", clientSecret: Secret("client-secret"), tokenEndpoint: #require(URL(string: listener.base + "/token")))
        configuration.connectsOnlyToPublicAddresses = true
        let error = try await withTransport { transport in
            let provider = try OAuth2Provider(configuration: configuration, transport: transport)
            return await #expect(throws: OAuth2Error.self) { try await provider.token(for: .clientCredentials) }
        }
        #expect(error?.code == .insecureEndpoint)
        #expect(error?.message.contains("client-secret") == false)
        #expect(listener.connections == 0, "the client secret went nowhere")
    }

}
