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
            provider until you approve, deny, or the code expires. On a terminal a
            countdown to the code's expiry is redrawn on one line; when stderr is not
            a terminal, or NO_COLOR is set, one line "Waiting for approval (the code
            expires in N s)…" is written instead, and nothing while waiting.

            Example:
              oauth2 device --device-url https://id.example/device \\
                  --token-url https://id.example/token --client-id tv-app --scope read
            """
    )

    @OptionGroup var common: CommonOptions

    @OptionGroup var dpop: DPoPOptions

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client(dpop: dpop.settings)
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
            let token: AccessToken
            if Terminal.mayRedrawStandardError {
                // A countdown redrawn in place, once a second.
                let countdown = Task {
                    while !Task.isCancelled {
                        let left = max(0, Int(authorization.expiresAt.timeIntervalSinceNow))
                        StandardError.write(Terminal.eraseLine + "Waiting for approval… the code expires in \(left) s")
                        try await Task.sleep(for: .seconds(1))
                    }
                }
                let result: Result<AccessToken, any Error>
                do {
                    result = .success(try await client.authenticate(.deviceCode(authorization)))
                } catch {
                    result = .failure(error)
                }
                countdown.cancel()
                _ = await countdown.result
                StandardError.eraseOpenLine()
                token = try result.get()
            } else {
                // Not a terminal, or NO_COLOR: one line, nothing more, so a log stays short.
                StandardError.line("Waiting for approval (the code expires in \(expiresIn) s)…")
                token = try await client.authenticate(.deviceCode(authorization))
            }
            StandardError.line("Approved. " + TokenSummary(token, account: client.account).sentence)
        }
    }
}
