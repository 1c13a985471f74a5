import Foundation

/// The user's browser at the provider: `scripts/provider-browser.sh` signs
/// in, answers the consent form and prints where the provider redirects to,
/// without going there.
enum ProviderBrowser {
    /// The redirect URL (to the app's `/callback`) after `user` signs in and consents, or denies.
    static func authorize(_ authorizeURL: String, as user: ProviderEnvironment.User, provider: ProviderEnvironment, deny: Bool = false)
        async throws -> String
    {
        var arguments = [authorizeURL, "--username", user.username, "--password=\(user.password)"]
        if deny { arguments.append("--deny") }
        let (status, output, errors) = try await run(provider.browser, arguments)
        guard status == 0 else {
            throw TestFailure("provider-browser.sh exited \(status): \(errors)")
        }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func run(_ executable: String, _ arguments: [String]) async throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        // Waiting in a termination handler keeps the test's threads free while Python runs.
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { process in
                let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                continuation.resume(returning: (process.terminationStatus, out, err))
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
    }
}
