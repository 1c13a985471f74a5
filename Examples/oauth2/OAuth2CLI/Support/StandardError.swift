import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The CLI's messages to the person: everything but results goes to stderr.
///
/// It remembers whether the last thing written ended its line, so that an
/// error always starts a line of its own (`error: <code>: <message>` must be
/// greppable even after an open prompt such as "Paste the redirect URL: ").
enum StandardError {
    private static let atLineStart = LockedValue(true)

    /// Writes `text` as is (a prompt, a progress dot).
    static func write(_ text: String) {
        guard !text.isEmpty else { return }
        atLineStart.withLock { atLineStart in
            FileDescriptor.write(STDERR_FILENO, text)
            atLineStart = text.hasSuffix("\n")
        }
    }

    /// Writes one line, first ending a line left open.
    static func line(_ text: String) {
        atLineStart.withLock { atLineStart in
            FileDescriptor.write(STDERR_FILENO, (atLineStart ? "" : "\n") + text + "\n")
            atLineStart = true
        }
    }

    /// Ends an open line (after a prompt whose answer the terminal did not echo a newline for).
    static func endLine() {
        atLineStart.withLock { atLineStart in
            if !atLineStart { FileDescriptor.write(STDERR_FILENO, "\n") }
            atLineStart = true
        }
    }

    /// Erases an open line (a countdown) on the terminal, leaving the cursor at its start.
    static func eraseOpenLine() {
        atLineStart.withLock { atLineStart in
            if !atLineStart { FileDescriptor.write(STDERR_FILENO, Terminal.eraseLine) }
            atLineStart = true
        }
    }

    /// Records that the line was ended by someone else (the terminal echoing the person's Enter).
    static func lineEndedByTerminal() {
        atLineStart.withLock { $0 = true }
    }

    /// `error: <code>: <message>`, at the start of a line.
    static func error(code: String, message: String) {
        line("error: \(code): \(message)")
    }
}

/// The CLI's results: stdout, unbuffered so a script reading a pipe sees a
/// line (the authorize URL) while the command still runs.
enum StandardOutput {
    /// Writes `text` and a newline.
    static func line(_ text: String) {
        FileDescriptor.write(STDOUT_FILENO, text + "\n")
    }

    /// Writes raw bytes (a response body) unchanged.
    static func write(_ bytes: [UInt8]) {
        FileDescriptor.write(STDOUT_FILENO, bytes)
    }
}

/// Unbuffered writes to a file descriptor.
enum FileDescriptor {
    static func write(_ fd: Int32, _ text: String) {
        write(fd, Array(text.utf8))
    }

    /// Writes every byte, retrying short writes; gives up silently when the
    /// reader is gone (a closed pipe is not worth a second error).
    static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { buffer in
                #if canImport(Darwin)
                Darwin.write(fd, buffer.baseAddress, buffer.count)
                #else
                Glibc.write(fd, buffer.baseAddress, buffer.count)
                #endif
            }
            if count > 0 {
                offset += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
