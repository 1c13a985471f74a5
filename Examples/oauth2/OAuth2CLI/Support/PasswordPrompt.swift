import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Asks for a password on the controlling terminal with echo turned off.
///
/// The prompt and the answer go through `/dev/tty`, not stdin/stderr, so
/// redirected streams never see the password. Echo is restored when the
/// answer is read, and by a signal handler if the person presses Ctrl-C.
enum PasswordPrompt {
    /// The longest password read.
    static let limit = 4096

    /// Reads a password after printing `prompt`.
    ///
    /// - Throws: ``UsageError`` when there is no terminal to ask on (use
    ///   `--password-stdin` then); `invalid_request` when nothing was typed.
    static func read(prompt: String) throws -> Secret {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            throw UsageError("there is no terminal to ask for the password on; pipe it in with --password-stdin")
        }
        defer { close(fd) }
        var original = termios()
        guard tcgetattr(fd, &original) == 0 else {
            throw UsageError("cannot turn off echo on the terminal; pipe the password in with --password-stdin")
        }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        silent.c_lflag |= tcflag_t(ECHONL)
        TerminalRestorer.arm(fd: fd, original: original)
        defer { TerminalRestorer.restore() }
        guard tcsetattr(fd, TCSAFLUSH, &silent) == 0 else {
            throw UsageError("cannot turn off echo on the terminal; pipe the password in with --password-stdin")
        }
        StandardError.endLine()
        _ = prompt.withCString { write(fd, $0, strlen($0)) }
        guard let password = StandardInput.readLine(from: fd, limit: limit) else {
            _ = write(fd, "\n", 1)
            throw OAuth2Error(code: .invalidRequest, message: "no password was entered")
        }
        guard !password.isEmpty else {
            throw OAuth2Error(code: .invalidRequest, message: "the password is empty")
        }
        return Secret(password)
    }
}

/// Puts the terminal's settings back, on the normal path and on SIGINT/SIGTERM.
///
/// A signal handler can read only global state; this one is written before
/// the handler is installed and cleared after it is removed.
private enum TerminalRestorer {
    // Read by the signal handler only between arm() and restore(), which run
    // on one thread before and after the single blocking read.
    nonisolated(unsafe) static var saved: (fd: Int32, settings: termios)?
    nonisolated(unsafe) static var previousInterrupt = sigaction()
    nonisolated(unsafe) static var previousTerminate = sigaction()

    static func arm(fd: Int32, original: termios) {
        saved = (fd, original)
        var action = sigaction()
        #if canImport(Darwin)
        action.__sigaction_u.__sa_handler = handle
        #else
        action.__sigaction_handler.sa_handler = handle
        #endif
        sigemptyset(&action.sa_mask)
        sigaction(SIGINT, &action, &previousInterrupt)
        sigaction(SIGTERM, &action, &previousTerminate)
    }

    static func restore() {
        guard let fd = saved?.fd, var settings = saved?.settings else { return }
        tcsetattr(fd, TCSAFLUSH, &settings)
        sigaction(SIGINT, &previousInterrupt, nil)
        sigaction(SIGTERM, &previousTerminate, nil)
        saved = nil
    }

    private static let handle: @convention(c) (Int32) -> Void = { number in
        if let fd = TerminalRestorer.saved?.fd, var settings = TerminalRestorer.saved?.settings {
            tcsetattr(fd, TCSAFLUSH, &settings)
            _ = write(fd, "\n", 1)
        }
        signal(number, SIG_DFL)
        raise(number)
    }
}
