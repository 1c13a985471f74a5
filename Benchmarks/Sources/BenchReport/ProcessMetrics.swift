#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's clocks and memory, read the cheap way (no Foundation).
package enum ProcessMetrics {
    /// Monotonic nanoseconds, for intervals.
    @inline(__always)
    package static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// User plus system CPU time of the whole process (every thread), in seconds.
    package static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// The peak resident set size of this program's image so far (VmHWM), in KiB.
    ///
    /// Not getrusage's ru_maxrss: that keeps the peak of the process that
    /// exec'ed this one (the Python driver) too.
    package static func peakRSSKiB() -> Int {
        status("VmHWM") ?? 0
    }

    /// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`), or nil.
    package static func status(_ field: String) -> Int? {
        let descriptor = open("/proc/self/status", O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[0..<count], as: UTF8.self)
        let prefix = field + ":"
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            return Int(String(line.dropFirst(prefix.count).filter(\.isNumber)))
        }
        return nil
    }

    /// Writes a line to standard error.
    package static func printError(_ message: String) {
        var line = message + "\n"
        line.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
    }

    /// Resets the peak RSS (VmHWM) to the current RSS, so a later peak shows
    /// growth from now on. Returns false where the kernel does not allow it.
    package static func resetPeakRSS() -> Bool {
        guard let file = fopen("/proc/self/clear_refs", "w") else { return false }
        defer { fclose(file) }
        return fputs("5", file) >= 0
    }
}
