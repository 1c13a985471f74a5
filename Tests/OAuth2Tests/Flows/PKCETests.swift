import Foundation
import Testing
@testable import OAuth2

@Suite struct PKCETests {
    @Test func challengeMatchesTheRFC7636AppendixBVector() {
        let verifier = Secret("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(PKCE.challenge(for: verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
    }

    @Test func methodIsS256() {
        #expect(PKCE.method == "S256")
    }

    @Test func verifierIs43Base64URLCharacters() {
        let verifier = PKCE.makeVerifier()
        #expect(verifier.value.count == 43)
        #expect(Base64URL.isBase64URL(verifier.value))
        #expect(!verifier.value.contains("="))
    }

    @Test func verifiersAreUnique() {
        let verifiers = Set((0..<200).map { _ in PKCE.makeVerifier().value })
        #expect(verifiers.count == 200)
    }

    @Test func challengeIs43Base64URLCharactersWithoutPadding() {
        let challenge = PKCE.challenge(for: PKCE.makeVerifier())
        #expect(challenge.count == 43)
        #expect(Base64URL.isBase64URL(challenge))
    }

    @Test func verifierDescriptionIsRedacted() {
        let verifier = PKCE.makeVerifier()
        #expect(!"\(verifier)".contains(verifier.value))
        #expect(!String(reflecting: verifier).contains(verifier.value))
    }
}
