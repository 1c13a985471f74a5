import Foundation
import OAuth2
import Testing

/// `oauth2 authorize --listen` against the provider: the scripted browser follows the redirect to the listener.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct ListenerFlowTests {
    @Test func theListenerReceivesTheRedirectOnAnEphemeralPort() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli)
        let command = try cli.start(["authorize", "--listen", "--redirect-uri", "http://127.0.0.1/callback"] + options)
        let url = try await command.firstLineOfStdout()
        let redirectURI = try #require(ListenerProbe.redirectURI(in: url))
        #expect(redirectURI.hasPrefix("http://127.0.0.1:"))
        #expect(redirectURI.hasSuffix("/callback"))
        _ = try await provider.browse(url, follow: true)
        let result = try await command.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("Waiting for the browser to come back to \(redirectURI)"))
        try await expectCallReturnsAlice(provider, cli, options)
    }
}

/// The loopback listener on its own: no provider needed, since nothing is
/// exchanged when the redirect carries an error (or is refused). Only the
/// redirect with the state of the printed authorize URL ends the wait.
@Suite struct ListenerTests {
    static let options = [
        "--authorize-url", "http://127.0.0.1:9/authorize", "--token-url", "http://127.0.0.1:9/token", "--client-id", "app",
    ]

    @Test func otherPathsAndForgedStatesGetAnErrorPageAndTheListenerKeepsWaiting() async throws {
        let cli = try CLI()
        let command = try cli.start(["authorize", "--listen", "--store", cli.store] + Self.options)
        let authorizeURL = try await command.firstLineOfStdout()
        let redirectURI = try #require(ListenerProbe.redirectURI(in: authorizeURL))
        let state = try #require(ListenerProbe.state(in: authorizeURL))
        let origin = try #require(redirectURI.range(of: "/callback")).lowerBound
        let favicon = try await ListenerProbe.get(String(redirectURI[..<origin]) + "/favicon.ico")
        #expect(favicon.status == 404)
        let prefix = try await ListenerProbe.get(redirectURI + "x?code=a&state=\(state)")
        #expect(prefix.status == 404)
        let forged = try await ListenerProbe.get(redirectURI + "?code=a&state=forged")
        #expect(forged.status == 400)
        let missing = try await ListenerProbe.get(redirectURI + "?code=a")
        #expect(missing.status == 400)
        let answer = try await ListenerProbe.get(redirectURI + "?error=access_denied&state=\(state)")
        #expect(answer.status == 200)
        let result = try await command.wait()
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: access_denied: ") == true, "\(result.stderr)")
    }

    @Test func thePageIsStaticUncacheableAndSendsNoReferrer() async throws {
        let cli = try CLI()
        let command = try cli.start(["authorize", "--listen", "--store", cli.store] + Self.options)
        let authorizeURL = try await command.firstLineOfStdout()
        let redirectURI = try #require(ListenerProbe.redirectURI(in: authorizeURL))
        let state = try #require(ListenerProbe.state(in: authorizeURL))
        let forged = try await ListenerProbe.get(redirectURI + "?code=a&state=%3Cscript%3Ereflected%3C%2Fscript%3E")
        let received = try await ListenerProbe.get(redirectURI + "?error=%3Cscript%3Ereflected%3C%2Fscript%3E&state=\(state)")
        #expect(forged.status == 400)
        #expect(received.status == 200)
        for answer in [forged, received] {
            #expect(answer.headers[.cacheControl] == "no-store")
            #expect(answer.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(answer.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(!answer.bodyText.contains("reflected"))
        }
        _ = try await command.wait()
    }

    @Test func anOversizedRedirectIsURLTooLong() async throws {
        let cli = try CLI()
        let command = try cli.start(["authorize", "--listen", "--store", cli.store] + Self.options)
        let authorizeURL = try await command.firstLineOfStdout()
        let redirectURI = try #require(ListenerProbe.redirectURI(in: authorizeURL))
        let state = try #require(ListenerProbe.state(in: authorizeURL))
        let answer = try await ListenerProbe.get(redirectURI + "?state=\(state)&code=" + String(repeating: "x", count: 20_000))
        #expect(answer.status == 414)
        let result = try await command.wait()
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: url_too_long: ") == true, "\(result.stderr)")
    }

    @Test func noRedirectWithinTheListenTimeoutIsATimeout() async throws {
        let cli = try CLI()
        let result = try await cli.run(["authorize", "--listen", "--listen-timeout", "1", "--store", cli.store] + Self.options)
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: timeout: no redirect reached http://127.0.0.1:") == true, "\(result.stderr)")
    }

    @Test func aRedirectURIWithAPortIsListenedOnThatPort() async throws {
        let cli = try CLI()
        let port = try ListenerProbe.freePort()
        let command = try cli.start(
            ["authorize", "--listen", "--redirect-uri", "http://127.0.0.1:\(port)/cb", "--store", cli.store] + Self.options)
        let authorizeURL = try await command.firstLineOfStdout()
        let redirectURI = try #require(ListenerProbe.redirectURI(in: authorizeURL))
        let state = try #require(ListenerProbe.state(in: authorizeURL))
        #expect(redirectURI == "http://127.0.0.1:\(port)/cb")
        let forged = try await ListenerProbe.get(redirectURI + "?error=access_denied&state=forged")
        #expect(forged.status == 400)
        let answer = try await ListenerProbe.get(redirectURI + "?error=access_denied&state=\(state)")
        #expect(answer.status == 200)
        #expect(try await command.wait().status == 1)
    }

    @Test func aRedirectURIThatIsNotLoopbackHTTPIsAUsageError() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["authorize", "--listen", "--redirect-uri", "https://app.example/callback", "--store", cli.store] + Self.options)
        #expect(result.status == 64)
        #expect(result.errorLines.first?.hasPrefix("error: usage: --listen needs") == true, "\(result.stderr)")
    }
}

/// Talks to the listener as a browser would.
enum ListenerProbe {
    /// The `redirect_uri` parameter of an authorize URL.
    static func redirectURI(in authorizeURL: String) -> String? {
        URLComponents(string: authorizeURL)?.queryItems?.first { $0.name == "redirect_uri" }?.value
    }

    /// The `state` parameter of an authorize URL.
    static func state(in authorizeURL: String) -> String? {
        URLComponents(string: authorizeURL)?.queryItems?.first { $0.name == "state" }?.value
    }

    /// A GET through the framework's transport.
    static func get(_ url: String) async throws -> HTTPTransportResponse {
        let transport = CurlTransport(configuration: CurlTransport.Configuration(timeout: .seconds(10)))
        let target = try #require(URL(string: url))
        do {
            let response = try await transport.send(HTTPTransportRequest(url: target))
            await transport.shutdown()
            return response
        } catch {
            await transport.shutdown()
            throw error
        }
    }

    /// A port nobody listens on right now (the kernel's pick, released at once).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProviderError(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw ProviderError(description: "bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
