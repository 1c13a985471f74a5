#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads what the person types or pipes in.
enum StandardInput {
    /// Whether stdin is a terminal (then the terminal echoes the person's Enter).
    static var isTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// One line of stdin without its line ending, or `nil` at the end of input.
    ///
    /// Reads at most `limit` bytes of the line and returns them: the caller
    /// passes over-long input on, and the framework's own size check refuses it
    /// (the rest of the line is left unread).
    static func readLine(limit: Int) -> String? {
        readLine(from: STDIN_FILENO, limit: limit)
    }

    /// One line read byte by byte from `fd` (no buffering past the line, so
    /// a later reader of the same descriptor misses nothing).
    static func readLine(from fd: Int32, limit: Int) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < limit {
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else {
                return bytes.isEmpty ? nil : decode(bytes)
            }
            if byte == UInt8(ascii: "\n") { return decode(bytes) }
            bytes.append(byte)
        }
        return decode(bytes)
    }

    private static func decode(_ bytes: [UInt8]) -> String {
        var bytes = bytes
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
