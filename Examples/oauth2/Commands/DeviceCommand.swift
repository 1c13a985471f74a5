import ArgumentParser
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 device`: the device authorization grant (RFC 8628).
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Sign in on another device (device authorization grant) and store the token.",
        discussion: """
            Shows on stderr where to go and the code to enter there, then polls the
            provider until you approve, deny, or the code expires.

            Example:
              oauth2 device --device-url https://id.example/device \\
                  --token-url https://id.example/token --client-id tv-app --scope read
            """
    )

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client()
            guard client.configuration.deviceAuthorizationEndpoint != nil else {
                throw UsageError(
                    "the device authorization endpoint is needed: --device-url (or OAUTH2_DEVICE_URL), or --issuer whose metadata names it")
            }
            let authorization = try await client.startDeviceAuthorization()
            let expiresIn = max(0, Int(authorization.expiresAt.timeIntervalSinceNow))
            StandardError.line("To sign in, open \(authorization.verificationURI.absoluteString)")
            StandardError.line("and enter the code: \(authorization.userCode)")
            if let complete = authorization.verificationURIComplete {
                StandardError.line("Or open this address, which carries the code: \(complete.absoluteString)")
            }
            StandardError.write("Waiting for approval (the code expires in \(expiresIn) s)")
            let ticker = Task {
                // A dot per polling interval: the person sees the command is alive.
                while !Task.isCancelled {
                    try await Task.sleep(for: max(authorization.interval, .seconds(1)))
                    StandardError.write(".")
                }
            }
            let token: AccessToken
            do {
                token = try await client.completeDeviceAuthorization(authorization)
                ticker.cancel()
            } catch {
                ticker.cancel()
                throw error
            }
            StandardError.line("Approved. " + TokenSummary(token, account: client.account).sentence)
        }
    }
}
