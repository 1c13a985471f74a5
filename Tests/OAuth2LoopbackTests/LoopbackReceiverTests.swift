import Foundation
import OAuth2
@testable import OAuth2Loopback
import OAuth2Testing
import Testing

/// The receiver driven over real loopback HTTP by the framework's own transport.
@Suite struct LoopbackReceiverTests {
    static let state = "Ks3-_state.0123456789abcdefghijklmnop"

    func receiver(_ uri: String = "http://127.0.0.1/callback") throws -> LoopbackReceiver {
        try LoopbackReceiver(redirectURI: #require(URL(string: uri)))
    }

    // MARK: - The redirect

    @Test func theMatchingRedirectEndsTheWaitAndIsReturned() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        let answer = try await Probe.request("\(receiver.redirectURI.absoluteString)?code=abc&state=\(Self.state)")
        #expect(answer.status == 200)
        #expect(answer.bodyText.contains("received the provider's answer"))
        let url = try await wait.url()
        #expect(url.absoluteString == "http://127.0.0.1:\(receiver.port)/callback?code=abc&state=\(Self.state)")
    }

    @Test func aProviderErrorWithTheStateEndsTheWaitToo() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        let answer = try await Probe.request("\(receiver.redirectURI.absoluteString)?error=access_denied&state=\(Self.state)")
        #expect(answer.status == 200)
        #expect(try await wait.url().query == "error=access_denied&state=\(Self.state)")
    }

    @Test func aForgedStateGetsAnErrorPageAndTheWaitGoesOn() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        let uri = receiver.redirectURI.absoluteString
        for query in [
            "code=evil&state=forged",
            "code=evil",
            "code=evil&state=",
            "code=evil&state=\(Self.state)x",
            "code=evil&state=\(Self.state.dropLast())",
            "code=evil&state=\(Self.state)&state=\(Self.state)",
            "code=evil&state=%ZZ",
        ] {
            let answer = try await Probe.request("\(uri)?\(query)")
            #expect(answer.status == 400, "\(query)")
            #expect(answer.bodyText.contains("keeps waiting"), "\(query)")
        }
        let answer = try await Probe.request("\(uri)?code=good&state=\(Self.state)")
        #expect(answer.status == 200)
        #expect(try await wait.url().query == "code=good&state=\(Self.state)")
    }

    @Test func anotherPathOrMethodGetsAnErrorPageAndTheWaitGoesOn() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        let origin = "http://127.0.0.1:\(receiver.port)"
        #expect(try await Probe.request("\(origin)/favicon.ico").status == 404)
        #expect(try await Probe.request("\(origin)/callbackx?code=evil&state=\(Self.state)").status == 404)
        #expect(try await Probe.request("\(origin)/callback/?code=evil&state=\(Self.state)").status == 404)
        #expect(try await Probe.request("\(origin)/?code=evil&state=\(Self.state)").status == 404)
        #expect(try await Probe.request("\(origin)/callback?code=evil&state=\(Self.state)", method: .post).status == 405)
        #expect(try await Probe.request("\(origin)/callback?code=good&state=\(Self.state)").status == 200)
        #expect(try await wait.url().query == "code=good&state=\(Self.state)")
    }

    @Test func aPercentEncodedStateMatches() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: "a b+c/d")
        #expect(try await Probe.request("\(receiver.redirectURI.absoluteString)?code=c&state=a+b%2Bc%2fd").status == 200)
        #expect(try await wait.url().query == "code=c&state=a+b%2Bc%2fd")
    }

    @Test func thePagesAreStaticUncacheableAndSendNoReferrer() async throws {
        let receiver = try LoopbackReceiver(redirectURI: #require(URL(string: "http://127.0.0.1/cb")), applicationName: "<b>tool</b>")
        let wait = Waiting(receiver, state: Self.state)
        let uri = receiver.redirectURI.absoluteString
        for url in [
            "\(uri)?code=a&state=%3Cscript%3Ereflected%3C%2Fscript%3E", "http://127.0.0.1:\(receiver.port)/reflected",
            "\(uri)?code=a&state=\(Self.state)",
        ] {
            let answer = try await Probe.request(url)
            #expect(answer.headers[.cacheControl] == "no-store")
            #expect(answer.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(answer.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(!answer.bodyText.contains("reflected"))
            #expect(!answer.bodyText.contains("<b>"))
            #expect(answer.bodyText.contains("&lt;b&gt;tool&lt;/b&gt;"))
        }
        _ = try await wait.url()
    }

    // MARK: - Connections

    @Test func theRedirectGetsThroughIdleConnectionsHoldingEverySlot() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        // A local process holds more connections than the receiver reads at
        // once (16), sending nothing; the rest wait in the backlog.
        var idle: [Int32] = []
        defer { idle.forEach { close($0) } }
        for _ in 0..<24 {
            idle.append(try #require(Probe.idleConnection(port: receiver.port)))
        }
        try await Task.sleep(for: .milliseconds(300))
        let clock = ContinuousClock()
        let start = clock.now
        let answer = try await Probe.request("\(receiver.redirectURI.absoluteString)?code=abc&state=\(Self.state)")
        #expect(answer.status == 200)
        #expect(try await wait.url().query == "code=abc&state=\(Self.state)")
        // Well before the idle connections' own 15-second timeout frees a slot.
        #expect(clock.now - start < .seconds(10))
    }

    // MARK: - Size

    @Test func anOverLongRequestLineIsRefusedAndTheWaitGoesOn() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        let uri = receiver.redirectURI.absoluteString
        let long = String(repeating: "x", count: LoopbackReceiver.maxRequestLine + 100)
        #expect(try await Probe.request("\(uri)?code=a&state=\(long)").status == 414)
        #expect(try await Probe.request("http://127.0.0.1:\(receiver.port)/\(long)").status == 414)
        #expect(try await Probe.request("\(uri)?code=good&state=\(Self.state)").status == 200)
        #expect(try await wait.url().query == "code=good&state=\(Self.state)")
    }

    @Test func anOverLongRedirectCarryingTheStateEndsWithURLTooLong() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        let long = String(repeating: "x", count: LoopbackReceiver.maxRequestLine + 100)
        let answer = try await Probe.request("\(receiver.redirectURI.absoluteString)?state=\(Self.state)&code=\(long)")
        #expect(answer.status == 414)
        #expect(await wait.errorCode() == .urlTooLong)
    }

    // MARK: - Ending the wait

    @Test func aCancelledWaitEndsAtOnceAndFreesThePort() async throws {
        let port = try Probe.freePort()
        let receiver = try receiver("http://127.0.0.1:\(port)/callback")
        let sockets = try Probe.sockets(of: receiver)
        let wait = Waiting(receiver, state: Self.state, timeout: .seconds(60))
        try await Task.sleep(for: .milliseconds(200))
        let clock = ContinuousClock()
        let start = clock.now
        wait.task.cancel()
        #expect(await wait.errorCode() == .cancelled)
        // Well before the wait's own 60 s: the cancellation ended it. Generous,
        // as every bound here: a busy 2-core machine can take a second.
        #expect(clock.now - start < .seconds(20))
        // The receiver is still alive: the end of the wait closed the socket, not deinit.
        #expect(try !Probe.isOpen(sockets))
        withExtendedLifetime(receiver) {}
    }

    @Test func aWaitCancelledWithAnOpenConnectionFreesThePortForTheNextReceiver() async throws {
        let port = try Probe.freePort()
        let uri = "http://127.0.0.1:\(port)/callback"
        let receiver = try receiver(uri)
        let wait = Waiting(receiver, state: Self.state, timeout: .seconds(60))
        let idle = try #require(Probe.idleConnection(port: port))
        defer { close(idle) }
        try await Task.sleep(for: .milliseconds(200))
        wait.task.cancel()
        #expect(await wait.errorCode() == .cancelled)
        let next = try self.receiver(uri)
        #expect(next.port == port)
        withExtendedLifetime(receiver) {}
    }

    @Test func aWaitInACancelledTaskEndsAtOnce() async throws {
        let port = try Probe.freePort()
        let receiver = try receiver("http://127.0.0.1:\(port)/callback")
        let sockets = try Probe.sockets(of: receiver)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await receiver.redirect(state: Self.state, timeout: .seconds(60))
        }
        #expect(await Waiting(task: task).errorCode() == .cancelled)
        #expect(try !Probe.isOpen(sockets))
    }

    @Test func theTimeoutEndsTheWaitWithATypedErrorAndFreesThePort() async throws {
        let port = try Probe.freePort()
        let receiver = try receiver("http://127.0.0.1:\(port)/callback")
        let sockets = try Probe.sockets(of: receiver)
        do {
            _ = try await receiver.redirect(state: Self.state, timeout: .milliseconds(300))
            Issue.record("the wait returned")
        } catch {
            #expect(error.code == .timeout)
            #expect(error.message.hasPrefix("no redirect reached http://127.0.0.1:\(port)/callback within 300 ms"))
            #expect(!error.message.contains(Self.state))
        }
        #expect(try !Probe.isOpen(sockets))
    }

    @Test func closeEndsAWaitInProgress() async throws {
        let port = try Probe.freePort()
        let receiver = try receiver("http://127.0.0.1:\(port)/callback")
        let sockets = try Probe.sockets(of: receiver)
        let wait = Waiting(receiver, state: Self.state, timeout: .seconds(60))
        try await Task.sleep(for: .milliseconds(200))
        receiver.close()
        #expect(await wait.errorCode() == .cancelled)
        #expect(try !Probe.isOpen(sockets))
    }

    @Test func closeFreesThePortOfAnIdleReceiver() throws {
        let port = try Probe.freePort()
        let receiver = try receiver("http://127.0.0.1:\(port)/callback")
        let sockets = try Probe.sockets(of: receiver)
        #expect(!Probe.canListen(onIPv4Port: port))
        receiver.close()
        receiver.close()
        #expect(try !Probe.isOpen(sockets))
    }

    @Test func releasingAReceiverFreesItsPort() throws {
        let port = try Probe.freePort()
        let sockets: Set<String>
        do {
            let receiver = try receiver("http://127.0.0.1:\(port)/callback")
            #expect(receiver.port == port)
            sockets = try Probe.sockets(of: receiver)
        }
        #expect(try !Probe.isOpen(sockets))
    }

    @Test func aReceiverServesOneWait() async throws {
        let receiver = try receiver()
        let wait = Waiting(receiver, state: Self.state)
        #expect(try await Probe.request("\(receiver.redirectURI.absoluteString)?code=a&state=\(Self.state)").status == 200)
        _ = try await wait.url()
        await #expect(
            throws: OAuth2Error(code: .invalidConfiguration, message: "this receiver already waited or was closed; create a new one")
        ) {
            try await receiver.redirect(state: Self.state, timeout: .seconds(1))
        }
    }

    @Test func anEmptyExpectedStateIsRefused() async throws {
        let receiver = try receiver()
        await #expect(throws: OAuth2Error.self) { try await receiver.redirect(state: "", timeout: .seconds(1)) }
    }

    // MARK: - Ports and hosts

    @Test func anEphemeralPortIsReportedInTheRedirectURI() throws {
        let receiver = try receiver("http://127.0.0.1/callback")
        #expect(receiver.port != 0)
        #expect(receiver.redirectURI.absoluteString == "http://127.0.0.1:\(receiver.port)/callback")
        #expect(!Probe.canListen(onIPv4Port: receiver.port))
    }

    @Test func aGivenPortIsKept() throws {
        let port = try Probe.freePort()
        let receiver = try receiver("http://127.0.0.1:\(port)/a/b%20c?x=1")
        #expect(receiver.port == port)
        #expect(receiver.redirectURI.absoluteString == "http://127.0.0.1:\(port)/a/b%20c?x=1")
    }

    @Test func anEmptyPathIsTheRootPath() async throws {
        let receiver = try receiver("http://127.0.0.1")
        #expect(receiver.redirectURI.absoluteString == "http://127.0.0.1:\(receiver.port)/")
        let wait = Waiting(receiver, state: Self.state)
        #expect(try await Probe.request("http://127.0.0.1:\(receiver.port)/?code=a&state=\(Self.state)").status == 200)
        _ = try await wait.url()
    }

    /// The receiver's own sockets are bound to `expected` and nothing in this
    /// process listens on the wildcard at its port. Only its own: a CI run saw
    /// another test's 127.0.0.1 listener on the port the kernel had just given
    /// a 127.0.0.2 receiver.
    func expectBound(_ receiver: LoopbackReceiver, to expected: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(Probe.listeningAddresses(of: receiver.listeningDescriptors) == expected, sourceLocation: sourceLocation)
        let wildcards = try Probe.listeningAddresses(port: receiver.port).filter { $0 == "0.0.0.0" || $0 == "::" }
        #expect(wildcards.isEmpty, sourceLocation: sourceLocation)
    }

    @Test func a127RedirectURIBindsOnly127AndNeverTheWildcard() throws {
        try expectBound(receiver("http://127.0.0.1/callback"), to: ["127.0.0.1"])
        try expectBound(receiver("http://127.0.0.2/callback"), to: ["127.0.0.2"])
    }

    @Test(.enabled(if: Probe.hasIPv6Loopback, "needs IPv6 loopback"))
    func anIPv6RedirectURIBindsOnlyIPv6Loopback() throws {
        try expectBound(receiver("http://[::1]/callback"), to: ["::1"])
    }

    @Test func localhostBindsOnlyTheLoopbackAddresses() throws {
        try expectBound(receiver("http://localhost/callback"), to: Probe.hasIPv6Loopback ? ["127.0.0.1", "::1"] : ["127.0.0.1"])
    }

    @Test func aPortInUseIsATransportError() throws {
        let port = try Probe.freePort()
        let taken = try #require(Probe.listener(port: port))
        defer { close(taken) }
        do {
            _ = try receiver("http://127.0.0.1:\(port)/callback")
            Issue.record("bound a port in use")
        } catch let error as OAuth2Error {
            #expect(error.code == .transportError)
            #expect(error.message.contains("127.0.0.1 port \(port)"))
        }
    }

    @Test(arguments: [
        "https://127.0.0.1/callback",
        "http://example.com/callback",
        "http://10.0.0.1/callback",
        "http://0.0.0.0/callback",
        "http://[::2]/callback",
        "http://[::ffff:127.0.0.1]/callback",
        "http://localhost.example/callback",
        "http://127.0.0.1/callback#fragment",
        "http://user@127.0.0.1/callback",
        "file:///callback",
    ])
    func aRedirectURIThatIsNotLoopbackHTTPIsRefused(_ uri: String) throws {
        do {
            _ = try receiver(uri)
            Issue.record("accepted \(uri)")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidConfiguration)
        }
    }

    @Test(.enabled(if: Probe.hasIPv6Loopback, "needs IPv6 loopback"))
    func anIPv6RedirectURIIsReceivedOnIPv6() async throws {
        let receiver = try receiver("http://[::1]/callback")
        #expect(receiver.redirectURI.absoluteString == "http://[::1]:\(receiver.port)/callback")
        let wait = Waiting(receiver, state: Self.state)
        #expect(try await Probe.request("http://[::1]:\(receiver.port)/callback?code=a&state=\(Self.state)").status == 200)
        #expect(try await wait.url().absoluteString == "http://[::1]:\(receiver.port)/callback?code=a&state=\(Self.state)")
    }

    @Test(.enabled(if: Probe.hasIPv6Loopback, "needs IPv6 loopback"))
    func localhostIsReceivedOnBothLoopbackAddresses() async throws {
        let receiver = try receiver("http://localhost/callback")
        #expect(receiver.redirectURI.absoluteString == "http://localhost:\(receiver.port)/callback")
        let wait = Waiting(receiver, state: Self.state)
        #expect(try await Probe.request("http://127.0.0.1:\(receiver.port)/callback?code=a&state=forged").status == 400)
        #expect(try await Probe.request("http://[::1]:\(receiver.port)/callback?code=a&state=forged").status == 400)
        #expect(try await Probe.request("http://[::1]:\(receiver.port)/callback?code=a&state=\(Self.state)").status == 200)
        #expect(try await wait.url().absoluteString == "http://localhost:\(receiver.port)/callback?code=a&state=\(Self.state)")
    }

    // MARK: - With the client

    @Test func theReceivedRedirectFinishesTheClientsFlow() async throws {
        let transport = CannedTransport()
        let tokenURL = try #require(URL(string: "https://id.example/token"))
        let provider = try OAuth2Provider(
            configuration: OAuth2Configuration(
                clientID: "cli",
                authorizationEndpoint: URL(string: "https://id.example/authorize"),
                tokenEndpoint: tokenURL
            ),
            transport: transport
        )
        let client = provider.client()
        let receiver = try receiver()
        let pending = try await client.authorizationURL(redirectURI: receiver.redirectURI)
        let wait = Task { try await receiver.redirect(for: pending, timeout: .seconds(20)) }
        #expect(try await Probe.request("\(receiver.redirectURI.absoluteString)?code=the-code&state=\(pending.state)").status == 200)
        transport.enqueue(json: #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600}"#, for: tokenURL)
        let token = try await client.authenticate(.authorizationCode(redirect: wait.value, pending: pending))
        #expect(token.accessToken.value == "at-1")
        let body = try #require(transport.requests(for: tokenURL).first?.body)
        #expect(String(decoding: body, as: UTF8.self).contains("code=the-code"))
    }

    @Test func aPendingAuthorizationForAnotherRedirectURIIsRefused() async throws {
        let provider = try OAuth2Provider(
            configuration: OAuth2Configuration(
                clientID: "cli",
                authorizationEndpoint: URL(string: "https://id.example/authorize"),
                tokenEndpoint: #require(URL(string: "https://id.example/token"))
            ),
            transport: CannedTransport()
        )
        let receiver = try receiver()
        let pending = try await provider.client().authorizationURL(redirectURI: #require(URL(string: "http://127.0.0.1:1/callback")))
        do {
            _ = try await receiver.redirect(for: pending, timeout: .seconds(1))
            Issue.record("the wait returned")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }

    /// RFC 9126 §2.2: the provider refuses a request_uri after its expires_in, so waiting for it is pointless.
    @Test func aPushedRequestThatExpiredIsNotWaitedFor() async throws {
        let transport = CannedTransport()
        let parURL = try #require(URL(string: "https://id.example/par"))
        var configuration = try OAuth2Configuration(
            clientID: "cli",
            authorizationEndpoint: URL(string: "https://id.example/authorize"),
            tokenEndpoint: #require(URL(string: "https://id.example/token"))
        )
        configuration.pushedAuthorizationRequestEndpoint = parURL
        configuration.pushedAuthorization = .always
        // Pushed on a clock long past: its 60 s ran out long ago.
        let provider = try OAuth2Provider(
            configuration: configuration, transport: transport, clock: ManualClock(Date(timeIntervalSince1970: 1_000_000_000)))
        let receiver = try receiver()
        transport.enqueue(json: #"{"request_uri":"urn:example:request_uri:1","expires_in":60}"#, status: 201, for: parURL)
        let pending = try await provider.client().authorizationURL(redirectURI: receiver.redirectURI)
        let started = ContinuousClock.now
        do {
            _ = try await receiver.redirect(for: pending, timeout: .seconds(20))
            Issue.record("the wait returned")
        } catch {
            #expect(error.code == .pushedRequestExpired)
        }
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
