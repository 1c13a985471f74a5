import OAuth2

/// `BearerChallenge` on `WWW-Authenticate` field values (one per input line).
///
/// Checked: no crash; the same answer twice (the parser keeps no state);
/// `parse` is `read`'s challenge; the first Bearer challenge is not changed
/// by fields after the one it is in; no parameter holds a control
/// character (they end up in error messages and decisions).
enum ChallengeTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let values = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let first = BearerChallenge.read(values)
        let second = BearerChallenge.read(values)
        guard first.bearer == second.bearer, first.malformed == second.malformed else {
            violation("two readings of the same fields differ")
        }
        guard BearerChallenge.parse(values) == first.bearer else { violation("parse differs from read") }
        if let bearer = first.bearer {
            for value in [bearer.error, bearer.errorDescription, bearer.scope].compactMap({ $0 }) {
                guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
                    violation("a challenge parameter with a control character")
                }
            }
            guard BearerChallenge.read(values + ["Bearer error=\"later\"", "Basic realm=x"]).bearer == bearer else {
                violation("a later field changed the first Bearer challenge")
            }
        }
    }
}
