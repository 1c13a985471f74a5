/// One fuzz target: a function of arbitrary bytes that must return normally.
///
/// A target traps (through ``violation(_:)``) when a property it checks
/// fails: a differential disagreement, a failed round trip, a secret in a
/// message. Anything else that stops the process (a runtime trap in the
/// library, an AddressSanitizer report) is a finding too.
///
/// The same functions run in two builds (see `Entry.swift`): under libFuzzer
/// to explore, and in the ordinary build to replay `Fuzz/Corpus/<name>/`,
/// which is how `make test` keeps every finding fixed.
struct FuzzTarget: Sendable {
    let name: String
    /// What the target checks, for `oauth2-fuzz list`.
    let summary: String
    let run: @Sendable (UnsafeRawBufferPointer) -> Void

    /// Every target, by the name its corpus folder and `OAUTH2_FUZZ_TARGET` use.
    static let all: [FuzzTarget] = [
        FuzzTarget(name: "json", summary: "JSONParser against Foundation's JSONSerialization", run: JSONTarget.run),
        FuzzTarget(
            name: "token-response", summary: "TokenResponseParser: no crash, token invariants, no secret in errors",
            run: TokenResponseTarget.run),
        FuzzTarget(name: "form", summary: "FormURLEncoding: decode, encode, decode round trip", run: FormTarget.run),
        FuzzTarget(name: "redirect", summary: "RedirectValidator: only the redirect URI's own URL yields a code", run: RedirectTarget.run),
        FuzzTarget(
            name: "www-authenticate", summary: "BearerChallenge: stable, first challenge wins, no control characters",
            run: ChallengeTarget.run),
        FuzzTarget(name: "header-lines", summary: "libcurl's header callback: well-formed fields, bounded", run: HeaderLineTarget.run),
        FuzzTarget(name: "http-date", summary: "HTTPDate against Foundation's DateFormatter, both ways", run: HTTPDateTarget.run),
        FuzzTarget(
            name: "store-file", summary: "TokenFileFormat: random bytes never decrypt; plaintext round trip", run: StoreFileTarget.run),
        FuzzTarget(
            name: "host", summary: "URL host, port, scheme and loopback judgement against libcurl's URL parser", run: HostTarget.run),
        FuzzTarget(
            name: "jose", summary: "CompactJWS and JSONWebKeySet: nothing verifies without the key, JOSE codes only, no token in errors",
            run: JOSETarget.run),
        FuzzTarget(
            name: "resource-metadata", summary: "ProtectedResourceMetadata: resource matches, only allowed authorization servers",
            run: ResourceMetadataTarget.run),
        FuzzTarget(
            name: "webfinger", summary: "WebFingerLookup: only the identifier's host asked, query round trip, only usable issuers",
            run: WebFingerTarget.run),
    ]

    static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// Stops the process: a target's property does not hold for this input.
///
/// The message says which property failed, with the parts each side read
/// where that helps; the input itself is in the file libFuzzer saves (and
/// replay names). Fuzz inputs hold no secrets, so a message may show them.
func violation(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("fuzz property violated: \(message())", file: file, line: line)
}
