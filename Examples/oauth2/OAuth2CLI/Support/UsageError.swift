/// A mistake in how the command was called: a missing or malformed option.
///
/// Reported as `error: usage: <message>` with exit status 64 (EX_USAGE),
/// like the argument parser's own errors; every other failure is an
/// `OAuth2Error` with exit status 1.
struct UsageError: Error, CustomStringConvertible {
    let message: String

    init(_ message: String) {
        self.message = message
    }

    var description: String { message }
}
