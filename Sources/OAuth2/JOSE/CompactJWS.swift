#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JWS in the compact serialization (RFC 7515 §7.1), such as an ID token,
/// as received: parsed, not yet verified.
///
/// Parsing is strict: exactly three parts of unpadded base64url, a header
/// that is a JSON object naming its `alg`, and no `crit` header (this library
/// understands no extension, so RFC 7515 §4.1.11 says refuse). Nothing here
/// ever puts the token, its payload or its signature in an error.
package struct CompactJWS: Sendable {
    /// The protected header.
    package let header: [String: JSONValue]
    /// The header's `alg`.
    package let algorithm: JWSAlgorithm
    /// The header's `kid`, when it names one.
    package let keyID: String?
    /// The payload, decoded; see ``payloadObject()``.
    package let payload: [UInt8]
    /// What the signature is over: the ASCII of `<header>.<payload>` as sent.
    package let signingInput: [UInt8]
    /// The signature, decoded.
    package let signature: [UInt8]

    /// Parses a compact JWS.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidJWT`` for text over `maxSize`
    ///   bytes, other than three parts, a part that is not strict unpadded
    ///   base64url, a header that is not a JSON object or has no string `alg`
    ///   (or a `kid` that is not a string), and a `crit` header.
    package init(_ text: String, maxSize: Int = 64 * 1024) throws(OAuth2Error) {
        guard text.utf8.count <= maxSize else { throw Self.invalid("the JWT is over \(maxSize) bytes") }
        let bytes = Array(text.utf8)
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Self.invalid("the JWT has \(parts.count) parts, not 3") }
        guard let headerBytes = Self.decode(parts[0]), let payload = Self.decode(parts[1]), let signature = Self.decode(parts[2]) else {
            throw Self.invalid("a part of the JWT is not unpadded base64url")
        }
        guard case .object(let header) = try Self.json(headerBytes, "header") else {
            throw Self.invalid("the JWT header is not a JSON object")
        }
        guard header["crit"] == nil else {
            throw Self.invalid("the JWT header has crit, naming extensions this library does not understand")
        }
        guard case .string(let algorithm)? = header["alg"] else {
            throw Self.invalid("the JWT header has no alg string")
        }
        var keyID: String?
        if let value = header["kid"] {
            guard case .string(let kid) = value else { throw Self.invalid("the JWT header's kid is not a string") }
            keyID = kid
        }
        self.header = header
        self.algorithm = JWSAlgorithm(rawValue: algorithm)
        self.keyID = keyID
        self.payload = payload
        self.signingInput = Array(bytes[..<(parts[1].endIndex)])
        self.signature = signature
    }

    /// The payload as a JSON object, such as an ID token's claims.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidJWT`` when it is not one.
    package func payloadObject() throws(OAuth2Error) -> [String: JSONValue] {
        guard case .object(let object) = try Self.json(payload, "payload") else {
            throw Self.invalid("the JWT payload is not a JSON object")
        }
        return object
    }

    /// Verifies the signature with a key of `keySet`, and returns that key.
    ///
    /// Public keys only: `none` and the HMACs are refused whatever the
    /// allow-list says, so a token signed with HS256 keyed by the provider's
    /// public key (the classic algorithm confusion) never verifies.
    ///
    /// - Throws: ``OAuth2Error/Code/unsupportedAlgorithm`` for `none`, an
    ///   HMAC, an algorithm this library does not know, or one outside
    ///   `allowedAlgorithms`; ``OAuth2Error/Code/unknownSigningKey`` when no key
    ///   of the set matches the `kid` and algorithm (see
    ///   ``JSONWebKeySet/candidates(keyID:algorithm:)``);
    ///   ``OAuth2Error/Code/invalidSignature`` when keys match but none verifies.
    @discardableResult
    package func verify(with keySet: JSONWebKeySet, allowedAlgorithms: Set<JWSAlgorithm>) throws(OAuth2Error) -> JSONWebKey {
        let name = OAuth2Error.sanitize(String(algorithm.rawValue.prefix(32)))
        guard algorithm.isSupportedAsymmetric else {
            throw OAuth2Error(code: .unsupportedAlgorithm, message: "the JWT's algorithm \(name) is not one verified with a public key")
        }
        guard allowedAlgorithms.contains(algorithm) else {
            throw OAuth2Error(code: .unsupportedAlgorithm, message: "the JWT's algorithm \(name) is not allowed")
        }
        let candidates = keySet.candidates(keyID: keyID, algorithm: algorithm)
        guard !candidates.isEmpty else {
            let kid = keyID.map { "kid \(OAuth2Error.sanitize(String($0.prefix(64))))" } ?? "no kid"
            throw OAuth2Error(code: .unknownSigningKey, message: "no key of the set verifies \(name) with \(kid)")
        }
        for key in candidates where key.isValidSignature(signature, for: signingInput, algorithm: algorithm) {
            return key
        }
        throw OAuth2Error(code: .invalidSignature, message: "the JWT's \(name) signature is not valid")
    }

    private static func invalid(_ message: String) -> OAuth2Error {
        OAuth2Error(code: .invalidJWT, message: message)
    }

    private static func decode(_ part: ArraySlice<UInt8>) -> [UInt8]? {
        Base64URL.decode(String(decoding: part, as: UTF8.self))
    }

    private static func json(_ bytes: [UInt8], _ name: String) throws(OAuth2Error) -> JSONValue {
        do throws(JSONParser.Failure) {
            return try JSONParser.parse(Data(bytes))
        } catch {
            throw invalid("the JWT \(name) is not JSON: \(error.reason)")
        }
    }
}

extension CompactJWS: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `CompactJWS(RS256, kid: …)`: the algorithm and key id, never the payload or signature.
    package var description: String {
        "CompactJWS(\(OAuth2Error.sanitize(String(algorithm.rawValue.prefix(32)))), kid: \(keyID.map { OAuth2Error.sanitize(String($0.prefix(64))) } ?? "none"))"
    }

    /// The same as ``description``.
    package var debugDescription: String { description }

    /// The algorithm and key id only: `dump` and debuggers never reach the token.
    package var customMirror: Mirror {
        Mirror(self, children: ["algorithm": algorithm, "keyID": keyID as Any], displayStyle: .struct)
    }
}
