#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// A provider's key set, the document at its `jwks_uri` (RFC 7517 §5): the
/// public keys its ID tokens are signed with.
public struct JSONWebKeySet: Sendable, Hashable {
    /// The keys this library can verify with, in the document's order.
    public let keys: [JSONWebKey]

    /// A key set of these keys.
    package init(keys: [JSONWebKey]) {
        self.keys = keys
    }

    /// Parses a JWKS document.
    ///
    /// A key of an unknown type or curve, a symmetric (`oct`) key, or a
    /// malformed one is skipped, not fatal: providers publish encryption keys
    /// and keys of newer algorithms in the same set.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidJWKS`` when the body is over
    ///   `maxSize` bytes, is not JSON, or is not an object with a `keys` array.
    package static func parse(_ body: Data, maxSize: Int = 1 << 20) throws(OAuth2Error) -> JSONWebKeySet {
        guard body.count <= maxSize else {
            throw OAuth2Error(code: .invalidJWKS, message: "the key set is over \(maxSize) bytes")
        }
        let document: JSONValue
        do throws(JSONParser.Failure) {
            document = try JSONParser.parse(body)
        } catch {
            throw OAuth2Error(code: .invalidJWKS, message: "the key set is not JSON: \(error.reason)")
        }
        guard case .object(let members) = document else {
            throw OAuth2Error(code: .invalidJWKS, message: "the key set is not a JSON object")
        }
        guard case .array(let items)? = members["keys"] else {
            throw OAuth2Error(code: .invalidJWKS, message: "the key set has no keys array")
        }
        var keys: [JSONWebKey] = []
        for item in items {
            guard case .object(let object) = item else { continue }
            do throws(OAuth2Error) {
                keys.append(try JSONWebKey(object))
            } catch {
                continue
            }
        }
        return JSONWebKeySet(keys: keys)
    }

    /// The keys that may verify a JWS with this `kid` and algorithm: when
    /// `keyID` is given, only the keys with that key id; either way, only
    /// those that ``JSONWebKey/canVerify(_:)`` the algorithm.
    package func candidates(keyID: String?, algorithm: JWSAlgorithm) -> [JSONWebKey] {
        keys.filter { key in
            (keyID == nil || key.keyID == keyID) && key.canVerify(algorithm)
        }
    }
}
