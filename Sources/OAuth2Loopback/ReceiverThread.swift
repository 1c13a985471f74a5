import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A detached POSIX thread for the receiver's blocking `poll` loop.
///
/// A wait can last minutes; on a thread of its own it never holds one of the
/// few threads of Swift's cooperative pool, and it needs no Foundation.
enum ReceiverThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts `body` on a new detached thread.
    ///
    /// - Returns: `nil` when it started; otherwise a `transport_error` (and `body` never runs).
    static func start(_ body: @escaping @Sendable () -> Void) -> OAuth2Error? {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let body = Unmanaged<Body>.fromOpaque(context).takeRetainedValue()
                body.run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return OAuth2Error(code: .transportError, message: "cannot start the receiver's thread: \(String(cString: strerror(result)))")
        }
        pthread_detach(thread)
        return nil
    }
}
