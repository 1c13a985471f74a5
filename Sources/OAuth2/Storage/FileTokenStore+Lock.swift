#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FileTokenStore {
    /// Runs `body` holding `account`'s lock: an exclusive `flock` on the
    /// account's lock file in the store directory (`<file name>.lock`, next to
    /// `<file name>.token`).
    ///
    /// Every acquisition opens the lock file anew, so the lock excludes other
    /// processes, other `FileTokenStore` values on the same directory and
    /// other tasks of this one alike. The kernel releases it when the holder
    /// closes it or dies (SIGKILL included), so a crashed process never
    /// leaves an account locked. Lock files are created 0600 whatever the
    /// umask; one that is a symbolic link, not a regular file, owned by
    /// another user or open to group or others is refused like a token file.
    /// They are never deleted (deleting one while another process waits on it
    /// would let two holders in) and hold no data. `flock` is not reliable on
    /// network file systems: keep the store on a local disk.
    ///
    /// - Throws: `lock_timeout` when another holder keeps it past `timeout`,
    ///   `cancelled`, `store_error` when the lock file cannot be opened or is
    ///   refused, or what `body` throws.
    public func withLock<Result: Sendable>(
        account: String,
        timeout: Duration,
        _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result {
        let fd = try openLockFile(account: account)
        defer { StoreFileSystem.closeQuietly(fd) }
        try await StoreLockWait.acquire(timeout: timeout, what: Self.describe(account)) { () throws(OAuth2Error) -> Bool in
            do throws(StoreFileSystem.Failure) {
                return try StoreFileSystem.tryLockExclusive(fd)
            } catch {
                throw OAuth2Error.store("cannot lock the lock file of \(Self.describe(account)): \(error.reason)")
            }
        }
        // Closing the descriptor (the defer above) releases the lock.
        return try await body()
    }

    /// Opens (creating it 0600 when missing) and checks the account's lock file.
    private func openLockFile(account: String) throws(OAuth2Error) -> Int32 {
        let name = try TokenFileName.lockName(for: account)
        let subject = "the lock file of \(Self.describe(account)) (\(directory)/\(name))"
        let fd: Int32
        do {
            fd = try StoreFileSystem.openFile(
                in: directoryDescriptor, name,
                flags: O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: 0o600
            )
        } catch {
            if error.errno == ELOOP {
                throw OAuth2Error.store("\(subject) is a symbolic link; refusing to follow it")
            }
            throw OAuth2Error.store("cannot open \(subject): \(error.reason)")
        }
        do throws(OAuth2Error) {
            let status: StoreFileSystem.Status
            do {
                status = try StoreFileSystem.status(of: fd)
            } catch {
                throw OAuth2Error.store("cannot inspect \(subject): \(error.reason)")
            }
            try status.requirePrivateRegularFile(
                subject,
                ownerAdvice: "refusing a lock someone else controls",
                modeAdvice: "refusing it (remove the file; the store creates it again)"
            )
            // The mode given to open passed through the umask: 0o277 would
            // leave 0400, which its owner could not open for writing again.
            if status.permissions != 0o600 {
                do {
                    try StoreFileSystem.changeMode(fd, 0o600)
                } catch {
                    throw OAuth2Error.store("cannot set the mode of \(subject) to 0600: \(error.reason)")
                }
            }
        } catch {
            StoreFileSystem.closeQuietly(fd)
            throw error
        }
        return fd
    }
}
