import Foundation
import OAuth2
import Testing

/// `oauth2 register` against the provider's registration endpoint (RFC 7591)
/// and its management (RFC 7592).
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct RegisterCommandTests {
    @Test func registerPrintsOnlyTheClientIDAndSavesAProviderWithoutSecrets() async throws {
        let resources = try ProtectedResources.main()
        let cli = try CallDiscoveryCommandTests.cli()

        let result = try await cli.run(["register", "--issuer", resources.issuer, "--auth-method", "client_secret_basic"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 1, "only the client id: \(result.stdout)")
        let clientID = try #require(lines.first)

        let registration = try #require(try await FileTokenStore(directory: cli.store).loadRegistration(issuer: resources.issuer))
        #expect(registration.clientID == clientID)
        let secret = try #require(registration.clientSecret?.value)
        let accessToken = try #require(registration.registrationAccessToken?.value)

        let name = try CallDiscoveryCommandTests.providerName(resources.issuer)
        let (shown, text) = try await CallDiscoveryCommandTests.show(name, cli)
        let settings = try #require(shown["settings"] as? [String: Any])
        #expect(settings["client_id"] as? String == clientID)
        let summary = try #require(settings["registration"] as? [String: Any])
        #expect(summary["has_client_secret"] as? Bool == true)
        #expect(summary["has_registration_access_token"] as? Bool == true)
        #expect(summary["registration_client_uri"] as? String == resources.endpoints.registration + clientID + "/")
        for secretText in [secret, accessToken] {
            #expect(!text.contains(secretText))
            #expect(!(try String(contentsOfFile: cli.directory + "/config/providers.json", encoding: .utf8)).contains(secretText))
            #expect(!result.stderr.contains(secretText))
        }
    }

    @Test func theClientSecretIsPrintedOnlyWhenAskedFor() async throws {
        let resources = try ProtectedResources.main()
        let cli = try CallDiscoveryCommandTests.cli()

        let result = try await cli.run([
            "register", "--issuer", resources.issuer, "--auth-method", "client_secret_basic", "--print-client-secret",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let registration = try #require(try await FileTokenStore(directory: cli.store).loadRegistration(issuer: resources.issuer))
        #expect(result.stdout == registration.clientID + "\n" + (registration.clientSecret?.value ?? "none") + "\n")
    }

    @Test func showReadsTheRegistrationBackAndDeleteRemovesItAtTheServer() async throws {
        let resources = try ProtectedResources.main()
        let cli = try CallDiscoveryCommandTests.cli()
        let name = try CallDiscoveryCommandTests.providerName(resources.issuer)

        let register = try await cli.run(["register", "--issuer", resources.issuer, "--client-name", "register test"])
        #expect(register.status == 0, "\(register.stderr)")
        let clientID = register.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let registration = try #require(try await FileTokenStore(directory: cli.store).loadRegistration(issuer: resources.issuer))

        let show = try await cli.run(["register", "--show", "--provider", name])
        #expect(show.status == 0, "\(show.stderr)")
        let shown = try JSONObject(show.stdout)
        #expect(shown.string("client_id") == clientID)
        #expect((shown["metadata"] as? [String: Any])?["client_name"] as? String == "register test")
        let registrationAccessToken = try #require(registration.registrationAccessToken?.value)
        #expect(!show.stdout.contains(registrationAccessToken))

        let delete = try await cli.run(["register", "--delete", "--provider", name])
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(try await FileTokenStore(directory: cli.store).loadRegistration(issuer: resources.issuer) == nil)
        // The server forgot it: its own management endpoint no longer knows the client.
        var read = HTTPTransportRequest(url: try #require(registration.registrationClientURI))
        read.headers.append(HTTPField(name: .authorization, value: "Bearer " + registrationAccessToken))
        #expect(try await Provider.send(read).status.code == 401)
        let again = try await cli.run(["register", "--show", "--provider", name])
        #expect(again.status == 64)
        #expect(again.errorLines.first?.hasPrefix("error: usage: no registration at ") == true, "\(again.stderr)")
    }

    @Test func aCallAfterRegisterUsesThatRegistration() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try CallDiscoveryCommandTests.cli()

        let register = try await cli.run(["register", "--issuer", resources.issuer])
        #expect(register.status == 0, "\(register.stderr)")
        let clientID = register.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let (result, urls) = try await CallDiscoveryCommandTests.call(a.hello, cli, provider, signIns: 1)
        #expect(result.status == 0, "\(result.stderr)")
        let authorizeURL = try #require(urls.first)
        #expect(CallDiscoveryCommandTests.parameter("client_id", in: authorizeURL) == [clientID])
        #expect(try CallDiscoveryCommandTests.answer(result).string("client_id") == clientID)
    }
}
