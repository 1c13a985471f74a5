import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Wakes the receiver's thread out of `poll`: a pipe whose read end is in the
/// poll set, and the reason it was woken.
///
/// The write end is used and closed under the lock, so a late cancellation
/// never writes to a descriptor number that was closed and reused.
final class Wakeup: Sendable {
    /// Why the wait is asked to end.
    enum Reason: Sendable {
        /// The waiting task was cancelled.
        case cancelled
        /// ``LoopbackReceiver/close()`` was called.
        case closed
    }

    private struct State {
        var reason: Reason?
        var isClosed = false
    }

    /// The end the receiver's thread polls; valid until ``close()``.
    let readEnd: Int32
    private let writeEnd: Int32
    private let state = LockedValue(State())

    /// - Throws: `transport_error` when no pipe can be made (out of descriptors).
    init() throws(OAuth2Error) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw OAuth2Error(code: .transportError, message: "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        // pipe2 is a GNU extension the Glibc module does not export; a
        // descriptor leaked to a child in between would only hold a pipe open.
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = Socket.setNonBlocking(end)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close()
    }

    /// Asks the wait to end; the first reason given is kept.
    func signal(_ reason: Reason) {
        state.withLock { state in
            guard !state.isClosed, state.reason == nil else { return }
            state.reason = reason
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
        }
    }

    /// Why the wait was asked to end, if it was.
    var reason: Reason? {
        state.withLock { $0.reason }
    }

    /// Closes both ends; call once the thread no longer polls. Harmless twice.
    func close() {
        state.withLock { state in
            guard !state.isClosed else { return }
            state.isClosed = true
            Socket.close(readEnd)
            Socket.close(writeEnd)
        }
    }
}
