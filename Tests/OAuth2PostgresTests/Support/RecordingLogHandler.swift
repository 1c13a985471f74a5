import Foundation
import Logging

/// Every log message, with its level and all its metadata, as text.
final class RecordedLogs: Sendable {
    private let lines = LockedLines()

    /// A logger at trace level that records here.
    func logger(label: String = "test") -> Logger {
        var logger = Logger(label: label) { _ in RecordingLogHandler(logs: self) }
        logger.logLevel = .trace
        return logger
    }

    func append(_ line: String) { lines.append(line) }
    var all: [String] { lines.all }
    var warnings: [String] { all.filter { $0.hasPrefix("warning ") } }
}

/// NSLock, not Mutex: ThreadSanitizer sees it.
private final class LockedLines: @unchecked Sendable { // every access holds `lock`
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

struct RecordingLogHandler: LogHandler {
    let logs: RecordedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        logs.append("\(event.level) \(event.message) \(merged) \(event.source)")
    }
}
