#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Signs JWTs: compact JWS (RFC 7515 §7.1) of a JSON object of claims.
public enum JWT {
    /// Signs `claims` with `key` as a compact JWS.
    ///
    /// The header holds `alg`, `typ` (`"JWT"` unless `type` says otherwise;
    /// none when nil) and `kid` when the key has one. Header and claims are
    /// serialized with their keys sorted and integral numbers without a
    /// fraction (`"exp":1700000000`), so the same input gives the same token.
    /// The token is a credential, so it comes back as a ``Secret``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when a claim is a
    ///   number that is not finite, or the key fails to sign.
    public static func sign(claims: [String: JSONValue], key: JWTSigningKey, type: String? = "JWT") throws(OAuth2Error) -> Secret {
        var header: [String: JSONValue] = ["alg": .string(key.algorithm.rawValue)]
        if let type { header["typ"] = .string(type) }
        if let keyID = key.keyID { header["kid"] = .string(keyID) }
        let encodedHeader = Base64URL.encode(try JOSEJSON.serialize(.object(header)))
        let encodedClaims = Base64URL.encode(try JOSEJSON.serialize(.object(claims)))
        let signingInput = "\(encodedHeader).\(encodedClaims)"
        let signature = try key.sign(Array(signingInput.utf8))
        return Secret("\(signingInput).\(Base64URL.encode(signature))")
    }
}

/// JWT assertions (RFC 7523 §3): the client's credential for
/// `private_key_jwt` and `client_secret_jwt` (where `iss` and `sub` are both
/// the client id and `aud` the token endpoint or the issuer), and the grant of
/// a JWT-bearer request.
public struct JWTAssertion: Sendable {
    /// The claims an assertion always sets, which `additionalClaims` may not replace.
    static let reservedClaims: Set<String> = ["iss", "sub", "aud", "jti", "iat", "exp"]

    /// Makes and signs an assertion.
    ///
    /// Its claims are `iss`, `sub`, `aud` (a single string), `jti` (128
    /// random bits in base64url, so a provider can refuse a replay), `iat`
    /// (now, in whole seconds) and `exp` (`iat` plus `lifetime`, rounded up
    /// to a whole second), and `additionalClaims`.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when `lifetime` is
    ///   not positive, `additionalClaims` names one of the six claims above,
    ///   or the key fails to sign.
    public static func make(
        issuer: String,
        subject: String,
        audience: String,
        key: JWTSigningKey,
        lifetime: Duration = .seconds(60),
        now: Date = Date(),
        additionalClaims: [String: JSONValue] = [:]
    ) throws(OAuth2Error) -> Secret {
        guard lifetime > .zero else {
            throw OAuth2Error(code: .invalidConfiguration, message: "a JWT assertion's lifetime must be positive")
        }
        let overridden = additionalClaims.keys.filter(reservedClaims.contains).sorted()
        guard overridden.isEmpty else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "additional claims may not replace the assertion's own \(overridden.joined(separator: ", "))"
            )
        }
        let issuedAt = (now.timeIntervalSince1970).rounded(.down)
        let expiry = issuedAt + lifetime.timeInterval.rounded(.up)
        var claims = additionalClaims
        claims["iss"] = .string(issuer)
        claims["sub"] = .string(subject)
        claims["aud"] = .string(audience)
        claims["jti"] = .string(Base64URL.encode(SecureRandom.bytes(16)))
        claims["iat"] = .number(issuedAt)
        claims["exp"] = .number(expiry)
        return try JWT.sign(claims: claims, key: key)
    }
}

/// The JSON of the JWTs this library signs: keys sorted by their UTF-8
/// bytes, no whitespace, integral numbers without a fraction or exponent,
/// `/` not escaped. Deterministic, unlike a dictionary's order.
enum JOSEJSON {
    /// The UTF-8 JSON text of `value`.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a number that is not finite.
    static func serialize(_ value: JSONValue) throws(OAuth2Error) -> [UInt8] {
        var output: [UInt8] = []
        try write(value, to: &output)
        return output
    }

    private static func write(_ value: JSONValue, to output: inout [UInt8]) throws(OAuth2Error) {
        switch value {
        case .null: output += Array("null".utf8)
        case .bool(let flag): output += Array((flag ? "true" : "false").utf8)
        case .number(let number): output += Array(try numberText(number).utf8)
        case .string(let string): writeString(string, to: &output)
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                try write(item, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (index, key) in keys.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                if let member = members[key] { try write(member, to: &output) }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// `1700000000` for an integral number up to 2^53, else Swift's shortest
    /// round-trip form (`0.5`, `1e+300`), which is valid JSON.
    static func numberText(_ number: Double) throws(OAuth2Error) -> String {
        guard number.isFinite else {
            throw OAuth2Error(code: .invalidConfiguration, message: "a JWT claim is a number that is not finite")
        }
        if number == number.rounded(), abs(number) <= 9_007_199_254_740_992 {
            return String(Int64(number))
        }
        return number.description
    }

    private static func writeString(_ string: String, to output: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                output += Array("\\u00".utf8)
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
