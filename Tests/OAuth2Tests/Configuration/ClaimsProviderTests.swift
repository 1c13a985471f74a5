import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// A claims provider the app names (``OpenIDSettings/claimsProviders``) is
/// held to the rules of every key set: https (or loopback http), public-key
/// algorithms, and its endpoints are matched by exact origin.
@Suite struct ClaimsProviderTests {
    static let jwks = URL(string: "https://bank.example/jwks")!

    func refusal(_ claimsProvider: ClaimsProvider) throws -> OAuth2Error.Code? {
        var configuration = try OpenIDRequestTests.configuration()
        configuration.openID?.claimsProviders = [claimsProvider]
        do {
            _ = try OAuth2Provider(configuration: configuration, transport: CannedTransport())
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aClaimsProviderMustBeSecureAndVerifiedWithPublicKeys() throws {
        #expect(try refusal(ClaimsProvider(issuer: "https://bank.example", jwksURI: Self.jwks)) == nil)
        #expect(
            try refusal(ClaimsProvider(issuer: "https://bank.example", jwksURI: URL(string: "http://bank.example/jwks")!))
                == .insecureEndpoint)
        #expect(
            try refusal(
                ClaimsProvider(issuer: "https://bank.example", jwksURI: Self.jwks, endpointOrigins: [URL(string: "http://bank.example")!]))
                == .insecureEndpoint)
        #expect(try refusal(ClaimsProvider(issuer: "", jwksURI: Self.jwks)) == .invalidConfiguration)
        #expect(
            try refusal(ClaimsProvider(issuer: "https://bank.example", jwksURI: Self.jwks, signingAlgorithms: [.hs256]))
                == .invalidConfiguration)
    }

    @Test func anEndpointIsTheProvidersOnlyAtOneOfItsOrigins() {
        let bank = ClaimsProvider(
            issuer: "https://bank.example", jwksURI: Self.jwks, endpointOrigins: [URL(string: "https://bank.example")!])
        #expect(bank.serves(URL(string: "https://bank.example:443/claims?x=1")!))
        #expect(bank.serves(URL(string: "https://BANK.example/other")!))
        #expect(!bank.serves(URL(string: "http://bank.example/claims")!))
        #expect(!bank.serves(URL(string: "https://bank.example:8443/claims")!))
        #expect(!bank.serves(URL(string: "https://bank.example.evil/claims")!))
    }
}
