#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Crypto

/// Proof Key for Code Exchange (RFC 7636) with the `S256` method only.
///
/// The client keeps a random verifier, sends its SHA-256 challenge in the
/// authorization request, and the verifier in the token request; a stolen
/// code is useless without it. `plain` is never used (RFC 9700 §2.1.1).
enum PKCE {
    /// The `code_challenge_method` sent: always `S256`.
    static let method = "S256"

    /// A fresh verifier: 32 bytes from the system CSPRNG, base64url without
    /// padding, so 43 characters of `[A-Za-z0-9-_]` (RFC 7636 §4.1).
    static func makeVerifier() -> Secret {
        Secret(Base64URL.encode(SecureRandom.bytes(32)))
    }

    /// The `S256` challenge of a verifier: base64url(SHA-256(ASCII(verifier))), without padding.
    static func challenge(for verifier: Secret) -> String {
        Base64URL.encode(SHA256.hash(data: Array(verifier.value.utf8)))
    }
}
