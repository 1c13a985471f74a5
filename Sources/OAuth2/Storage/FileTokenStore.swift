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

/// A ``TokenStore`` that keeps one file per account in a private directory,
/// optionally encrypted with AES-256-GCM.
///
/// **The directory.** The store creates it (and missing parents) with mode
/// 0700. A directory that already exists must be owned by this user and give
/// no permission to group or others: the store refuses it with `store_error`
/// rather than `chmod` a directory it did not make, which may be shared on
/// purpose; fix it with `chmod 700` or choose another. The store keeps the
/// directory open (one file descriptor for the store's lifetime: share one
/// store, do not make one per request) and works relative to it, so it uses
/// the directory it checked even if the path is later replaced.
///
/// **Files.** Each account's file is created 0600 whatever the umask. A save
/// writes a temporary file in the same directory, fsyncs it, renames it over
/// the old file and fsyncs the directory: after a crash the account has its
/// old token or its new one, never a torn file. Concurrent saves each use
/// their own temporary file; the last rename wins. How account names become
/// file names (percent-encoding, no traversal, no collisions) is described at
/// ``FileTokenStore/fileName(for:)``.
///
/// **The format** is a JSON envelope, version 2, that carries the token's
/// ``TokenBinding`` (token endpoint and client id, no secret) in the clear
/// beside the token or its ciphertext, so which provider a file belongs to
/// can be seen and, when encrypted, is authenticated. Version 1 files,
/// written before bindings existed, still load (their tokens without a
/// binding); the next save rewrites them as version 2.
///
/// **Lock files.** ``withLock(account:timeout:_:)`` locks `<name>.lock` next
/// to the account's `<name>.token` (`alice.lock` for `alice.token`), created
/// 0600 whatever the umask, refused like a token file when it is a link,
/// someone else's or open to others. They hold no data and are never
/// deleted: removing one while another process waits on it would let two
/// holders in.
///
/// **Loads refuse rather than guess.** Only a missing file is `nil`. A file
/// that is a symbolic link or not a regular file, owned by another user,
/// readable or writable by group or others, over 1 MiB, damaged, of an unknown
/// format version, encrypted when the store has no key (or with another key),
/// plaintext when the store requires encryption, or whose clear-text binding
/// disagrees with its token's is a `store_error` naming the account and the
/// problem: a silent "no token" would log the user out, and a token file
/// others could read or write must not be trusted. No message ever contains
/// a token or a key.
///
/// **Encryption** (``Encryption``) binds the account name and the token's
/// binding as authenticated data, so a file copied to another account's name,
/// or whose clear-text binding was edited, does not decrypt.
///
/// Safe to use from many tasks at once; file I/O blocks the calling thread
/// briefly (the files are small).
public final class FileTokenStore: TokenStore {
    /// The largest file a load reads and a save writes.
    public static let maximumFileSize = 1 << 20

    /// How old a leftover temporary file must be before the store removes it.
    ///
    /// A save holds its temporary file for milliseconds; one older than this
    /// was left by a crash. Removing one a stalled process still writes only
    /// makes that process's rename fail: it never damages a token.
    public static let staleTemporaryFileAge: Duration = .seconds(300)

    /// The directory's path, as given.
    public let directory: String
    /// Whether and how files are encrypted.
    public let encryption: Encryption

    let directoryDescriptor: Int32
    let hooks: Hooks

    /// Opens the store in `directory`, creating it with mode 0700 when missing.
    ///
    /// Removes temporary files older than ``staleTemporaryFileAge`` that a
    /// crash left behind.
    ///
    /// - Parameters:
    ///   - directory: where the token files live; a path, relative paths are
    ///     resolved now. A symbolic link to a directory is followed and the
    ///     directory it leads to is checked.
    ///   - encryption: ``Encryption/plaintext`` (the default) or
    ///     ``Encryption/aesGCM(_:acceptingPlaintextFiles:)``.
    /// - Throws: `store_error` when the directory cannot be created or opened,
    ///   is not a directory, belongs to another user, or is open to group or
    ///   others.
    public convenience init(directory: String, encryption: Encryption = .plaintext) throws(OAuth2Error) {
        try self.init(directory: directory, encryption: encryption, hooks: Hooks())
    }

    /// Opens the store with test hooks on its saves (``Hooks``).
    package init(directory: String, encryption: Encryption, hooks: Hooks) throws(OAuth2Error) {
        guard !directory.isEmpty else {
            throw OAuth2Error.store("the token store's directory path is empty")
        }
        let fd: Int32
        do {
            fd = try StoreFileSystem.openDirectory(creating: directory, afterCreating: { hooks.afterCreatingDirectory?($0) }).descriptor
        } catch  where error.call == "mkdir" || error.call == "fchmod" {
            throw OAuth2Error.store("cannot create the token store's directory \(directory): \(error.reason)")
        } catch {
            let reason = error.errno == ENOTDIR ? "it is not a directory" : error.reason
            throw OAuth2Error.store("cannot open the token store's directory \(directory): \(reason)")
        }
        do {
            try Self.checkDirectory(fd, path: directory)
        } catch {
            StoreFileSystem.closeQuietly(fd)
            throw error
        }
        self.directory = directory
        self.encryption = encryption
        self.directoryDescriptor = fd
        self.hooks = hooks
        _ = try? removeStaleTemporaryFiles()
    }

    deinit {
        StoreFileSystem.closeQuietly(directoryDescriptor)
    }

    /// The stored token, or `nil` when the account has no file.
    ///
    /// - Throws: `store_error` for an empty account name and for any file
    ///   that is there but cannot be trusted or read (see the type's
    ///   documentation); never `nil` for those.
    public func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        let name = try TokenFileName.fileName(for: account)
        let subject = describeFile(account: account, name: name)
        guard
            let bytes = try readPrivateFile(
                name, subject: subject,
                ownerAdvice: "refusing a token file someone else controls",
                modeAdvice: "refusing it (the token may be exposed: delete the file and sign in again)")
        else { return nil }
        return try TokenFileFormat.decode(bytes, account: account, encryption: encryption, subject: subject)
    }

    /// Replaces the account's token, atomically and durably.
    ///
    /// Writes the current file format (version 2; see the type's documentation).
    ///
    /// - Throws: `store_error` naming the step that failed and why (a full
    ///   disk, a read-only file system, …). When any step up to the rename
    ///   fails, the account's previous token is left as it was and no
    ///   temporary file remains. When only the final flush of the directory
    ///   fails, the new token is in place and loads, but a crash before the
    ///   system writes the directory back may bring the previous one back;
    ///   the message says so.
    public func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
        let name = try TokenFileName.fileName(for: account)
        let subject = describeFile(account: account, name: name)
        let bytes = try TokenFileFormat.encode(token, account: account, encryption: encryption)
        guard bytes.count <= Self.maximumFileSize else {
            throw OAuth2Error.store(
                "the token of \(Self.describe(account)) is \(bytes.count) bytes encoded, over the store's limit of \(Self.maximumFileSize)")
        }

        let temporary = try writeTemporaryFile(bytes, for: name, subject: subject)
        do {
            if let beforeRename = hooks.beforeRename {
                try await beforeRename(temporary)
            }
            try StoreFileSystem.renameFile(in: directoryDescriptor, temporary, to: name, injecting: fault(at: .rename))
        } catch {
            _ = try? StoreFileSystem.removeFile(in: directoryDescriptor, temporary)
            guard let failure = error as? StoreFileSystem.Failure else {
                throw OAuth2Error.store(
                    "cannot save \(subject): the save was interrupted before the rename; the previous token is unchanged")
            }
            throw Self.saveFailure(subject, at: .rename, failure)
        }
        do {
            try StoreFileSystem.synchronize(directoryDescriptor, injecting: fault(at: .synchronizeDirectory))
        } catch {
            throw OAuth2Error.store(
                "saved \(subject), but \(SaveStep.synchronizeDirectory.activity) failed: \(error.reason); the new token is in place and loads, but after a crash the file may hold the previous token"
            )
        }
    }

    /// Deletes the account's file; deleting an account that has none is not an error.
    ///
    /// - Throws: `store_error` for an empty account name or when the file cannot be removed.
    public func delete(account: String) async throws(OAuth2Error) {
        let name = try TokenFileName.fileName(for: account)
        do {
            guard try StoreFileSystem.removeFile(in: directoryDescriptor, name) else { return }
            try StoreFileSystem.synchronize(directoryDescriptor)
        } catch {
            throw OAuth2Error.store("cannot delete \(describeFile(account: account, name: name)): \(error.reason)")
        }
    }

    /// Removes temporary files that crashed saves left behind, when older than `age`.
    ///
    /// The store does this when it opens; a long-running process may call it
    /// now and then. Loads ignore temporary files whatever their age.
    ///
    /// - Returns: how many files were removed.
    @discardableResult
    public func removeStaleTemporaryFiles(olderThan age: Duration = FileTokenStore.staleTemporaryFileAge) throws(OAuth2Error) -> Int {
        let now = time(nil)
        let ageSeconds = Int(age.components.seconds)
        var removed = 0
        do {
            for name in try StoreFileSystem.entries(of: directoryDescriptor) where TokenFileName.isTemporary(name) {
                guard let status = try StoreFileSystem.status(in: directoryDescriptor, name),
                    status.isRegularFile, status.owner == StoreFileSystem.currentUser,
                    Self.isAtLeast(ageSeconds, secondsOld: status.modificationSeconds, at: now)
                else { continue }
                if try StoreFileSystem.removeFile(in: directoryDescriptor, name) { removed += 1 }
            }
        } catch {
            throw OAuth2Error.store("cannot clean up temporary files in the token store's directory \(directory): \(error.reason)")
        }
        return removed
    }

    /// Whether a file last modified at `modified` is at least `age` seconds
    /// old at `now` (both in seconds since the epoch).
    ///
    /// A modification time is whatever the file system keeps, and tmpfs keeps
    /// any 64-bit value a `touch` sets: `now - modified` overflowed (and
    /// trapped) for a time far enough in the past. Such a file is as old as
    /// can be. A time in the future is never old enough, however far: a save
    /// in progress under a clock set back must not lose its file.
    static func isAtLeast(_ age: Int, secondsOld modified: Int, at now: Int) -> Bool {
        let (elapsed, overflow) = now.subtractingReportingOverflow(modified)
        guard !overflow else { return modified < now }
        return elapsed >= age
    }

    /// The name of the file that holds `account`'s token, inside ``directory``.
    ///
    /// Every UTF-8 byte outside `[A-Za-z0-9_-]` is percent-encoded (so `/`,
    /// `.`, spaces and non-ASCII letters never reach the file system as
    /// themselves) and `.token` is appended: `alice@example.com` is stored as
    /// `alice%40example%2Ecom.token`. Distinct accounts get distinct names,
    /// none starts with a dot or leaves the directory. An account whose
    /// encoding would exceed 200 bytes is stored as `+sha256-<hex>.token`.
    /// Unicode is not normalised: differently composed spellings are
    /// different accounts.
    ///
    /// - Throws: `store_error` for an empty account name.
    public static func fileName(for account: String) throws(OAuth2Error) -> String {
        try TokenFileName.fileName(for: account)
    }

    /// Creates, fills, fsyncs and closes a fresh temporary file; returns its name.
    func writeTemporaryFile(_ bytes: [UInt8], for name: String, subject: String) throws(OAuth2Error) -> String {
        var attempts = 0
        while true {
            attempts += 1
            let temporary = TokenFileName.temporaryName(for: name)
            let fd: Int32
            do {
                fd = try StoreFileSystem.openFile(
                    in: directoryDescriptor, temporary,
                    flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600,
                    injecting: fault(at: .createTemporaryFile)
                )
            } catch {
                if error.errno == EEXIST && attempts < 3 { continue }
                throw Self.saveFailure(subject, at: .createTemporaryFile, error)
            }
            var step = SaveStep.setMode
            do {
                // The mode given to open passed through the umask; set it outright.
                try StoreFileSystem.changeMode(fd, 0o600, injecting: fault(at: .setMode))
                step = .write
                try StoreFileSystem.writeAll(fd, bytes, injecting: fault(at: .write))
                step = .synchronizeFile
                try StoreFileSystem.synchronize(fd, injecting: fault(at: .synchronizeFile))
            } catch {
                StoreFileSystem.closeQuietly(fd)
                _ = try? StoreFileSystem.removeFile(in: directoryDescriptor, temporary)
                throw Self.saveFailure(subject, at: step, error)
            }
            do {
                try StoreFileSystem.closeFile(fd, injecting: fault(at: .closeFile))
            } catch {
                _ = try? StoreFileSystem.removeFile(in: directoryDescriptor, temporary)
                throw Self.saveFailure(subject, at: .closeFile, error)
            }
            return temporary
        }
    }

    /// The error for a save that failed at `step`, up to the rename: the previous token is still there.
    private static func saveFailure(_ subject: String, at step: SaveStep, _ failure: StoreFileSystem.Failure) -> OAuth2Error {
        OAuth2Error.store("cannot save \(subject): \(step.activity) failed: \(failure.reason); the previous token is unchanged")
    }

    /// The bytes of the store's file `name`, or `nil` when there is none:
    /// opened without following a link, refused unless it is a regular file
    /// of this user's that no one else can read or write (the advice goes
    /// into the error), and read up to the store's size limit. Every failure
    /// is a `store_error` naming `subject`.
    func readPrivateFile(_ name: String, subject: String, ownerAdvice: String, modeAdvice: String) throws(OAuth2Error) -> [UInt8]? {
        let fd: Int32
        do {
            fd = try StoreFileSystem.openFile(in: directoryDescriptor, name, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch {
            switch error.errno {
            case ENOENT:
                return nil
            case ELOOP:
                throw OAuth2Error.store("\(subject) is a symbolic link; refusing to follow it")
            default:
                throw OAuth2Error.store("cannot open \(subject): \(error.reason)")
            }
        }
        defer { StoreFileSystem.closeQuietly(fd) }
        do {
            let status = try StoreFileSystem.status(of: fd)
            try status.requirePrivateRegularFile(subject, ownerAdvice: ownerAdvice, modeAdvice: modeAdvice)
            guard status.size <= Self.maximumFileSize else {
                throw OAuth2Error.store(
                    "\(subject) is \(status.size) bytes, over the limit of \(Self.maximumFileSize); refusing to read it")
            }
            guard let bytes = try StoreFileSystem.readAll(fd, limit: Self.maximumFileSize) else {
                throw OAuth2Error.store("\(subject) is over \(Self.maximumFileSize) bytes; refusing to read it")
            }
            return bytes
        } catch let error as OAuth2Error {
            throw error
        } catch let failure as StoreFileSystem.Failure {
            throw OAuth2Error.store("cannot read \(subject): \(failure.reason)")
        } catch {
            throw OAuth2Error.store("cannot read \(subject)")
        }
    }

    private static func checkDirectory(_ fd: Int32, path: String) throws(OAuth2Error) {
        let status: StoreFileSystem.Status
        do {
            status = try StoreFileSystem.status(of: fd)
        } catch {
            throw OAuth2Error.store("cannot inspect the token store's directory \(path): \(error.reason)")
        }
        guard status.isDirectory else {
            throw OAuth2Error.store("the token store's directory \(path) is not a directory")
        }
        try status.requirePrivate(
            "the token store's directory \(path)",
            ownerAdvice: "choose a directory of your own",
            modeAdvice:
                "the store will not change the mode of a directory it did not create (run chmod 700 on it, or choose another directory)"
        )
    }

    private func describeFile(account: String, name: String) -> String {
        "the token file of \(Self.describe(account)) (\(directory)/\(name))"
    }

    /// `account "name"`, control characters removed and bounded: account names come from callers and may be odd.
    package static func describe(_ account: String) -> String {
        "account \"\(OAuth2Error.sanitize(String(account.prefix(100))))\""
    }
}
