// The child process of the crash tests (Tests/StoreCrashTests): saves a token
// over the one stored for "alice", holding the account's lock as a refresh
// does, and stops dead at a chosen point of the save so that the parent can
// SIGKILL it exactly there.
//
//     StoreCrashChild <directory> <stop> <access token> <refresh token>
//
// <stop> is a save step (`FileTokenStore.SaveStep`: stop just before its
// system call), `write+<n>` (stop in the middle of the write, after n bytes),
// or `saved` (stop once the save has returned). Reaching it, the child prints
// `stopped <stop>` on stdout and waits for its signal. With
// STORE_CRASH_CHILD_KEY set (64 hex digits), the store is encrypted with it.
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import OAuth2

/// Where the child stops.
enum StopPoint {
    case before(FileTokenStore.SaveStep)
    case writing(afterBytes: Int)
    case saved

    init?(_ text: String) {
        if text == "saved" {
            self = .saved
        } else if text.hasPrefix("write+"), let count = Int(text.dropFirst("write+".count)), count > 0 {
            self = .writing(afterBytes: count)
        } else if let step = FileTokenStore.SaveStep(rawValue: text) {
            self = .before(step)
        } else {
            return nil
        }
    }
}

/// Writes `text` to a descriptor at once, unbuffered: the parent acts on it.
func say(_ text: String, to descriptor: Int32) {
    let bytes = Array(text.utf8)
    var written = 0
    while written < bytes.count {
        let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return }
        written += count
    }
}

/// Says where it stopped, then waits for SIGKILL.
func stop(at point: String) -> Never {
    say("stopped \(point)\n", to: STDOUT_FILENO)
    while true { pause() }
}

func fail(_ message: String) -> Never {
    say("StoreCrashChild: \(message)\n", to: STDERR_FILENO)
    exit(2)
}

// A parent that died without killing the child must not leave it behind.
alarm(120)

let arguments = CommandLine.arguments
guard arguments.count == 5, let stopPoint = StopPoint(arguments[2]) else {
    fail("usage: StoreCrashChild <directory> <step | write+<bytes> | saved> <access token> <refresh token>")
}
let point = arguments[2]
let writes = LockedValue(0)
let hooks = FileTokenStore.Hooks(failing: { step in
    switch stopPoint {
    case .before(let target) where target == step:
        stop(at: point)
    case .writing(let bytes) where step == .write:
        let attempt = writes.withLock { count -> Int in
            count += 1
            return count
        }
        guard attempt > 1 else { return .shortWrite(bytes) }
        stop(at: point)
    default:
        return nil
    }
})
// Large enough that a write stopped halfway leaves a torn temporary file.
let token = AccessToken(
    accessToken: Secret(arguments[3]),
    expiresAt: Date(timeIntervalSince1970: 1_900_000_000),
    refreshToken: Secret(arguments[4]),
    scopes: ["read"],
    extraFields: ["padding": .string(String(repeating: "p", count: 4096))]
)
do {
    let encryption: FileTokenStore.Encryption =
        getenv("STORE_CRASH_CHILD_KEY") == nil
        ? .plaintext
        : .aesGCM(try FileTokenStore.EncryptionKey.fromEnvironment("STORE_CRASH_CHILD_KEY"))
    let store = try FileTokenStore(directory: arguments[1], encryption: encryption, hooks: hooks)
    try await store.withLock(account: "alice", timeout: .seconds(30)) { () async throws(OAuth2Error) in
        try await store.save(token, account: "alice")
    }
} catch {
    fail("the save failed: \(error)")
}
guard case .saved = stopPoint else { fail("the save never reached \(point)") }
stop(at: point)
