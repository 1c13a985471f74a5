import Foundation
import OAuth2
import Testing

/// The CLI's DPoP options and how it shows and hands out a DPoP-bound token,
/// where no provider is needed: `--dpop` on the grant commands only,
/// `token`'s binding, and the programs that would send a bound token as a
/// bearer token (git, kubectl) refused.
@Suite struct CommandLineDPoPTests {
    /// A DPoP-bound token stored for `default`, issued to the client `app`; returns its key.
    static func storeBoundToken(in cli: CLI, accessToken: String = "at-bound") async throws -> DPoPKey {
        let key = try DPoPKey.generate()
        var token = AccessToken(accessToken: Secret(accessToken), tokenType: "DPoP", expiresAt: Date().addingTimeInterval(3600))
        token.dpopKey = key
        try await CommandLineTests.store(token, in: cli)
        return key
    }

    /// The private key's `d`, as the token record holds it: it must never be printed.
    static func privateMember(of key: DPoPKey) throws -> String {
        let object = try JSONObject(String(decoding: try JSONEncoder().encode(key), as: UTF8.self))
        return try #require(object["d"] as? String)
    }

    static func options(_ cli: CLI) -> [String] {
        ["--store", cli.store, "--client-id", "app"] + CommandLineTests.endpoints
    }

    @Test func tokenJSONSaysTheTokenIsBoundToItsDPoPKeyAndNeverShowsTheKey() async throws {
        let cli = try CLI()
        let key = try await Self.storeBoundToken(in: cli)

        let result = try await cli.run(["token", "--format", "json"] + Self.options(cli))

        #expect(result.status == 0, "\(result.stderr)")
        let binding = try #require(try JSONObject(result.stdout)["binding"] as? [String: Any], "\(result.stdout)")
        #expect(binding["type"] as? String == "dpop")
        #expect(binding["jkt"] as? String == key.thumbprint)
        #expect(binding.count == 2, "\(binding)")
        #expect(!result.stdout.contains(try Self.privateMember(of: key)))
        #expect(!result.stdout.contains("at-bound"))
    }

    @Test func tokenTextSaysWhatTheTokenIsBoundTo() async throws {
        let cli = try CLI()
        let key = try await Self.storeBoundToken(in: cli)

        let result = try await cli.run(["token"] + Self.options(cli))

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\nbound to: DPoP key \(key.thumbprint)\n"), "\(result.stdout)")
        #expect(!result.stdout.contains(try Self.privateMember(of: key)))
    }

    @Test func aBearerTokenHasNoBinding() async throws {
        let cli = try CLI()
        try await CommandLineTests.store(AccessToken(accessToken: Secret("at-bearer"), expiresAt: Date().addingTimeInterval(3600)), in: cli)

        let json = try await cli.run(["token", "--format", "json"] + Self.options(cli))
        #expect(json.status == 0, "\(json.stderr)")
        #expect(try JSONObject(json.stdout)["binding"] == nil, "\(json.stdout)")

        let text = try await cli.run(["token"] + Self.options(cli))
        #expect(text.stdout.contains("\nbound to: nothing (a bearer token: whoever holds it can use it)\n"), "\(text.stdout)")
    }

    @Test func gitCredentialGetRefusesADPoPBoundToken() async throws {
        let cli = try CLI()
        _ = try await Self.storeBoundToken(in: cli)

        let result = try await cli.run(
            ["git-credential", "get"] + Self.options(cli) + CommandLineTests.gitHost, input: CommandLineTests.gitRequest())

        #expect(result.status == 1)
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(result.stderr.hasPrefix("error: unsupported_token_type: this token is bound to a DPoP key "), "\(result.stderr)")
        #expect(!result.stderr.contains("at-bound"))
    }

    @Test func kubernetesFormatRefusesADPoPBoundToken() async throws {
        let cli = try CLI()
        _ = try await Self.storeBoundToken(in: cli)

        let result = try await cli.run(["token", "--format", "kubernetes"] + Self.options(cli))

        #expect(result.status == 1)
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(result.stderr.contains("kubectl would present it as a bearer token"), "\(result.stderr)")
    }

    @Test(arguments: ["authorize", "device", "client-credentials", "password"])
    func everyGrantCommandOffersDPoP(command: String) async throws {
        let help = try await CommandLineTests.help(command)
        #expect(help.contains("--dpop Bind this grant's tokens to a new DPoP key"), "\(help)")
        #expect(help.contains("--dpop-algorithm <alg>"), "\(help)")
    }

    @Test(arguments: ["call", "refresh", "token", "userinfo", "revoke", "git-credential"])
    func aCommandThatUsesAStoredTokenTakesNoDPoPFlag(command: String) async throws {
        let cli = try CLI()
        let arguments =
            command == "call" ? ["call", "http://127.0.0.1:9/api"] : command == "git-credential" ? ["git-credential", "get"] : [command]
        let result = try await cli.run(arguments + ["--dpop"] + Self.options(cli), input: "")
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("Unknown option '--dpop'"), "\(result.stderr)")
    }

    @Test func aDPoPAlgorithmNoKeyCanBeMadeForIsAParserError() async throws {
        let cli = try CLI()
        let result = try await cli.run(["client-credentials", "--dpop-algorithm", "HS256"] + Self.options(cli))
        #expect(result.status == 64)
        #expect(
            result.errorLines == [
                "error: usage: The value 'HS256' is invalid for '--dpop-algorithm <alg>'. Please provide one of 'ES256', 'EdDSA', 'PS256' or 'RS256'."
            ], "\(result.stderr)")
    }
}
