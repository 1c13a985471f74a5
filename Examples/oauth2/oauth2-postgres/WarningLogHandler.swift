import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes `warning: <message>` on stderr for each warning (and worse): what
/// the person must see even without --verbose. The framework's warnings
/// name no secret and no provider text.
struct WarningLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard event.level >= .warning else { return }
        let line = Array("warning: \(event.message)\n".utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
