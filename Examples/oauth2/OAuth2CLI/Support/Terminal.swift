#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether the CLI may draw on the terminal: it uses no color, only a
/// countdown line redrawn in place (carriage return and erase-line) while the
/// device flow waits, and only when stderr is a terminal (not `TERM=dumb`)
/// and `NO_COLOR` is not set (https://no-color.org: any non-empty value).
/// Otherwise it writes plain lines that a log file can keep.
enum Terminal {
    /// Whether `NO_COLOR` asks for plain output.
    static var noColor: Bool { EnvironmentVariables.value("NO_COLOR") != nil }

    /// Whether stderr is a terminal that understands redrawing.
    static var stderrIsTerminal: Bool {
        isatty(STDERR_FILENO) == 1 && EnvironmentVariables.value("TERM") != "dumb"
    }

    /// Whether stderr may carry a live countdown.
    static var mayRedrawStandardError: Bool { stderrIsTerminal && !noColor }

    /// Goes back to the line's start and erases it.
    static let eraseLine = "\r\u{1B}[2K"
}
