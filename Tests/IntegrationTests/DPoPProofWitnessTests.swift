import Foundation
import OAuth2
import Testing

/// Our DPoP proofs and thumbprints read by an independent JOSE
/// implementation: jwcrypto (PyPI), which the local provider's virtual
/// environment has (django-oauth-toolkit depends on it). It verifies each
/// proof's signature with the JWK the proof carries, and computes the RFC 7638
/// thumbprint of that JWK itself.
@Suite(
    .enabled(
        if: Provider.mainIsConfigured, "needs the local provider's Python environment: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct DPoPProofWitnessTests {
    /// Reads a JSON array of `{proof, token}` on stdin, writes for each the
    /// header's `typ` and `alg`, whether the JWK has private members, the
    /// JWK's thumbprint, the claims, and the SHA-256 of `token` as `ath` is made.
    static let verifier = #"""
        import base64, hashlib, json, sys
        from jwcrypto import jwk, jws
        out = []
        for case in json.load(sys.stdin):
            token = jws.JWS()
            token.deserialize(case["proof"])
            header = token.jose_header
            key = jwk.JWK(**header["jwk"])
            token.verify(key, alg=header["alg"])
            ath = None
            if case.get("token"):
                ath = base64.urlsafe_b64encode(hashlib.sha256(case["token"].encode()).digest()).rstrip(b"=").decode()
            out.append({
                "typ": header["typ"], "alg": header["alg"], "private": key.has_private,
                "thumbprint": key.thumbprint(), "claims": json.loads(token.payload), "ath": ath,
            })
        print(json.dumps(out))
        """#

    static func python() throws -> String {
        let provider = try Provider.main()
        return URL(fileURLWithPath: provider.runDir).deletingLastPathComponent().appendingPathComponent("venv/bin/python").path
    }

    @Test func jwcryptoVerifiesOurProofsAndComputesOurThumbprints() async throws {
        let url = "https://Server.Example.com:443/token?query=1#fragment"
        var keys: [DPoPKey] = []
        var cases: [[String: String]] = []
        for algorithm in DPoPKey.supportedAlgorithms {
            let key = try DPoPKey.generate(algorithm: algorithm)
            keys.append(key)
            let now = Date()
            cases.append(["proof": try key.proof(method: "POST", url: url, nonce: "n-1", now: now).value])
            cases.append([
                "proof": try key.proof(
                    method: "GET", url: url, accessToken: Secret("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"), now: now
                )
                .value,
                "token": "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU",
            ])
        }
        let input = String(decoding: try JSONSerialization.data(withJSONObject: cases), as: UTF8.self)
        let result = try await Subprocess.run(
            try Self.python(), ["-c", Self.verifier], environment: ProcessInfo.processInfo.environment, input: input)
        #expect(result.status == 0, "\(result.stderr)")
        let answers = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        #expect(answers.count == cases.count)
        for (index, answer) in answers.enumerated() {
            let key = keys[index / 2]
            let claims = try #require(answer["claims"] as? [String: Any])
            #expect(answer["typ"] as? String == "dpop+jwt")
            #expect(answer["alg"] as? String == key.algorithm.rawValue)
            #expect(answer["private"] as? Bool == false)
            #expect(answer["thumbprint"] as? String == key.thumbprint, "\(key.algorithm)")
            #expect(claims["htu"] as? String == "https://server.example.com/token")
            if index % 2 == 0 {
                #expect(claims["htm"] as? String == "POST")
                #expect(claims["nonce"] as? String == "n-1")
                #expect(claims["ath"] == nil)
            } else {
                #expect(claims["htm"] as? String == "GET")
                #expect(claims["ath"] as? String == answer["ath"] as? String)
                #expect(claims["ath"] as? String == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
            }
        }
    }
}
