import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a secret (the client secret, a database password) from a file.
enum SecretFile {
    /// The largest secret file read.
    static let limit = 64 * 1024

    /// The file's content without one trailing line break (`echo` and editors add one).
    ///
    /// - Throws: `OAuth2Error` `invalid_configuration` when the file cannot be
    ///   read, is too large or empty; the message names the file, never its content.
    static func load(_ path: String, what: String = "the client secret file") throws(OAuth2Error) -> Secret {
        func failure(_ reason: String) -> OAuth2Error {
            OAuth2Error(code: .invalidConfiguration, message: "cannot use \(what) \(path): \(reason)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes = try readAll(fd, limit: limit, failure: failure)
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty else { throw failure("it is empty") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw failure("it is not UTF-8 text") }
        return Secret(text)
    }
}
