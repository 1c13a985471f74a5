import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Provider {
    /// Starts the device authorization grant (RFC 8628): the code to show the user and where.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` without a device
    ///   authorization endpoint, or the provider's error.
    public func startDeviceAuthorization(scopes: [String]? = nil) async throws(OAuth2Error) -> DeviceAuthorization {
        let scopes = scopes ?? configuration.defaultScopes
        let request = try TokenRequestBuilder.deviceAuthorizationRequest(scopes: scopes, configuration: configuration, now: clock.now())
        let requestedAt = clock.now()
        let response = try await perform(request)
        return try DeviceAuthorization.parse(response, requestedAt: requestedAt)
    }

    /// Polls the token endpoint until the user approves the device, denies
    /// it, or the code expires (``OAuth2Grant/deviceCode(_:scopes:)``).
    ///
    /// Sleeps on the provider's clock, so that a test's manual clock drives the polling.
    /// With DPoP, every poll carries a new proof of the one key the grant's
    /// token is bound to.
    func pollDeviceToken(_ authorization: DeviceAuthorization, scopes: [String]) async throws(OAuth2Error) -> AccessToken {
        var interval = authorization.interval
        let key = try configuration.newDPoPKey()
        while true {
            do throws(OAuth2Error) {
                guard clock.now() < authorization.expiresAt else {
                    throw OAuth2Error(code: .expiredToken, message: "the device code expired before the user approved it")
                }
                do {
                    try await clock.sleep(for: interval)
                } catch {
                    throw OAuth2Error(code: .cancelled, message: "device authorization polling was cancelled")
                }
                return try await requestToken(.deviceCode(authorization.deviceCode), requestedScopes: scopes, dpopKey: key)
            } catch  where error.code == .authorizationPending {
                logger.trace("device authorization pending")
            } catch  where error.code == .slowDown {
                interval += .seconds(5)
                logger.debug("device authorization: slowing down", metadata: ["oauth2.interval": "\(interval)"])
            }
        }
    }
}
