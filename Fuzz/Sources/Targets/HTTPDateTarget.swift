import Foundation
import OAuth2

/// `HTTPDate` (IMF-fixdate, RFC 9110 §5.6.7) against Foundation's
/// `DateFormatter`, and `Retry-After` reading.
///
/// An input starting with `#` is a date: its next 8 bytes pick an instant
/// between 1600 and 9999 (Foundation's calendar is Julian before 1582, ours
/// proleptic Gregorian, as HTTP's), Foundation writes it and `HTTPDate` must
/// read back that instant. Any other input is text: when `HTTPDate` reads a
/// date from it, it is a whole second, and Foundation's spelling of that
/// date (from 1600 to 9999: 9999-12-31 23:59:60 is in year 10000, which
/// has five digits) reads back the same.
/// `Retry-After` on the text stays within 0…24 h.
enum HTTPDateTarget {
    private static let formatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }()
    /// 1600-01-01 and 10000-01-01, in seconds since 1970.
    private static let earliest: Int64 = -11_676_096_000
    private static let latest: Int64 = 253_402_300_800

    static func run(_ bytes: UnsafeRawBufferPointer) {
        if bytes.first == UInt8(ascii: "#") {
            var raw: UInt64 = 0
            for byte in bytes.dropFirst().prefix(8) { raw = raw << 8 | UInt64(byte) }
            let seconds = earliest + Int64(raw % UInt64(latest - earliest))
            let date = Date(timeIntervalSince1970: Double(seconds))
            let text = formatter.string(from: date)
            guard HTTPDate.parse(text) == date else { violation("HTTPDate misreads Foundation's IMF-fixdate of \(seconds) s") }
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if let date = HTTPDate.parse(text) {
            guard date.timeIntervalSince1970.rounded() == date.timeIntervalSince1970 else {
                violation("a date with a fraction of a second")
            }
        }
        if let date = HTTPDate.parse(text), date.timeIntervalSince1970 >= Double(earliest), date.timeIntervalSince1970 < Double(latest) {
            let again = formatter.string(from: date)
            guard HTTPDate.parse(again) == date else { violation("HTTPDate misreads Foundation's spelling of a date it read") }
        }
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        if let delay = ProviderResponse.retryAfter(text, now: now) {
            guard delay >= .zero, delay <= ProviderResponse.maxRetryAfter else { violation("a Retry-After outside 0…24 h") }
        }
    }
}
