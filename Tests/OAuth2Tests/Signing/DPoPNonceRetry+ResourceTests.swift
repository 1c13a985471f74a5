import Foundation
import Testing
@testable import OAuth2

/// A resource server's answers, as the nonce retry policy reads them (RFC 9449 §9).
@Suite struct DPoPNonceRetryResourceTests {
    private func event(_ status: Int, _ fields: [HTTPField]) -> String {
        let response = HTTPTransportResponse(status: .init(code: status), headers: HTTPFields(fields))
        switch DPoPNonceRetry.Event(resourceAnswer: response) {
        case .answered(let refuses, let nonce): return "\(refuses) \(nonce ?? "-")"
        }
    }

    @Test func aRefusalIsA401WithADPoPUseDPoPNonceChallenge() {
        let ask = HTTPField(name: .wwwAuthenticate, value: #"DPoP error="use_dpop_nonce""#)
        let nonce = HTTPField(name: HTTPField.Name("DPoP-Nonce")!, value: "eyJ7S_zG.eyJH0-Z.HX4w-7v")
        #expect(event(401, [ask, nonce]) == "true eyJ7S_zG.eyJH0-Z.HX4w-7v")
        #expect(event(401, [ask]) == "true -")
        #expect(event(401, [ask, HTTPField(name: HTTPField.Name("DPoP-Nonce")!, value: "")]) == "true -")
        #expect(event(400, [ask, nonce]) == "false eyJ7S_zG.eyJH0-Z.HX4w-7v")
        #expect(
            event(401, [HTTPField(name: .wwwAuthenticate, value: #"Bearer error="use_dpop_nonce""#), nonce])
                == "false eyJ7S_zG.eyJH0-Z.HX4w-7v")
        #expect(event(200, [nonce]) == "false eyJ7S_zG.eyJH0-Z.HX4w-7v")
    }
}
