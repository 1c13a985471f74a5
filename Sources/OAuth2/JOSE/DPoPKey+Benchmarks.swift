#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

@_spi(Benchmarks)
extension DPoPKey {
    /// Makes one DPoP proof (RFC 9449) exactly as a DPoP-signed request
    /// does (the claims, their JSON, the signature, the compact JWS), for
    /// the benchmarks in `Benchmarks/`, which a release build cannot reach
    /// through `@testable import`.
    ///
    /// Not API: SPI (`@_spi(Benchmarks) import OAuth2`) with a leading
    /// underscore; it may change or go at any time.
    ///
    /// - Returns: the proof's length in bytes: a benchmark needs no more, and
    ///   a proof is made per request, never handed around.
    /// - Throws: the ``OAuth2Error`` a request would throw for this URL.
    public func _benchmarkProof(method: String, url: String, accessToken: Secret?, now: Date) throws(OAuth2Error) -> Int {
        try proof(method: method, url: url, accessToken: accessToken, now: now).value.utf8.count
    }
}
