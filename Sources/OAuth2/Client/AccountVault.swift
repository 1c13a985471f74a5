#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Synchronization

/// The accounts' tokens as a provider keeps them: read from the store, saved
/// to it, held in memory when the store refuses them, and the store's
/// account lock around all of that. One per ``OAuth2Provider``, shared by
/// every client it makes.
///
/// **A token the provider issued is never dropped.** This type is where
/// that holds; every path that has a new token from the provider ends here:
/// - a grant (``adoptIssued(_:account:)``) saves under the account lock,
///   and when the lock cannot be taken (`lock_timeout`, a cancelled wait)
///   saves without it rather than lose the token;
/// - an adoption (``adopt(_:account:)``), a refresh or renewal, a refresh
///   whose ID token was refused, and a deferred ID token verified later all
///   save through ``persist(_:account:)``: when the store fails, the token is
///   kept in memory (`unsaved`), ``load(account:)`` returns it before the
///   store's, and it is used;
/// - a kept token is saved again: on the next signed request once
///   ``unsavedRetryInterval`` has passed (``unsavedNeedsRetry(account:)``,
///   ``retryUnsaved(account:)``), when a process about to exit asks
///   (``OAuth2Client/saveUnsavedToken(waitingUpTo:)``), and by the kept
///   account lock (``withAccountLock(_:_:)``), which other processes then
///   wait for instead of spending the refresh token the provider rotated;
/// - a kept token is forgotten only when the store took it, or when the
///   account's token is deleted (``delete(account:)``, after the store's
///   delete succeeded).
///
/// Reads check the binding: a stored token issued to another provider or
/// client, or one recording none that the configuration does not adopt, is
/// refused (`provider_mismatch`) and never sent anywhere.
final class AccountVault: Sendable {
    /// Where tokens are kept; ``OAuth2Provider/store``.
    let store: any TokenStore
    private let configuration: OAuth2Configuration
    private let clock: any OAuth2Clock
    private let logger: Logger
    private let telemetry: OAuth2Telemetry

    /// Tokens the provider issued that the store could not save, by account.
    private let unsaved = LockedValue<[AccountKey: UnsavedToken]>([:])
    /// The store locks kept while an account's token waits to be saved.
    private let keptLocks = LockedValue<[AccountKey: KeptAccountLock]>([:])
    /// Whether `unsaved` has any entry, readable without its lock: every
    /// signed request asks, and with several threads sending, taking a lock
    /// shared by all the provider's clients for that made them wait on each other.
    private let anyUnsaved = Atomic<Bool>(false)

    /// How long a caller waits for an account's lock: as long as a holder
    /// that is making progress can hold it. A refresh holds it for a token
    /// request and up to two fetches of the key set (a cached set too old,
    /// then an unknown key), and when the provider refuses the refresh token
    /// of a renewable grant, as long again to run that grant: six request
    /// timeouts, and a little for the store's own reads and writes.
    let accountLockWait: Duration

    /// How long after a failed save the client tries again, at the earliest;
    /// a kept lock's first retry (``withAccountLock(_:_:)``).
    static let unsavedRetryInterval: Duration = .seconds(1)

    /// The longest a kept lock waits between two saves of the token the store refused.
    static let keptLockRetryCap: Duration = .seconds(10)

    init(store: any TokenStore, configuration: OAuth2Configuration, clock: any OAuth2Clock, logger: Logger, telemetry: OAuth2Telemetry) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.telemetry = telemetry
        accountLockWait = configuration.requestTimeout * 6 + .seconds(5)
    }

    // MARK: - Reading

    /// The account's token: one the store could not save (kept here until it
    /// can), else the stored one.
    ///
    /// - Throws: `store_error`; `provider_mismatch` when the stored token was
    ///   issued to another provider or client, or records none and the
    ///   configuration does not adopt such tokens (it is then never used).
    func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        if let unsaved = unsaved.withLock({ $0[AccountKey(account)]?.token }) {
            return unsaved
        }
        let token: AccessToken?
        do {
            token = try await store.load(account: account)
        } catch {
            throw OAuth2Error(storeError: error, doing: "read")
        }
        if let token {
            let subject = "the token stored for \(FileTokenStore.describe(account))"
            try configuration.requireOwnBinding(
                of: token,
                subject: subject,
                consequence:
                    "it is not used or sent anywhere (sign in under another account name, or sign out with the first provider's settings)"
            )
            guard token.binding != nil || configuration.adoptsTokensStoredWithoutBinding || !store.isPersistent else {
                throw OAuth2Error(
                    code: .providerMismatch,
                    message:
                        "\(subject) records no provider (it was stored before tokens recorded theirs), so it is not used or sent anywhere: sign in again, or set adoptsTokensStoredWithoutBinding on the configuration of the provider that issued it"
                )
            }
        }
        return token
    }

    /// Stamps a token stored without a binding (one ``load(account:)`` let
    /// through because the configuration adopts such tokens) with this
    /// configuration's and saves it, under the account lock, unless another
    /// process replaced it meanwhile.
    ///
    /// Best effort: the token is stored already, so a failure here loses nothing.
    ///
    /// - Returns: the token to hold: the stamped one, or what the store holds now.
    func recordBinding(of legacy: AccessToken, account: String) async -> AccessToken {
        let stamped = {
            var token = legacy
            token.binding = configuration.binding
            return token
        }()
        do {
            return try await withAccountLock(account) { () async throws -> AccessToken in
                guard let current = try await self.load(account: account) else { return stamped }
                guard current.binding == nil, current.accessToken == legacy.accessToken else { return current }
                try await self.store.save(stamped, account: account)
                return stamped
            }
        } catch {
            logger.debug(
                "could not record the provider of a stored token",
                metadata: ["oauth2.account": "\(account)", "oauth2.error": "\((error as? OAuth2Error)?.code.rawValue ?? "store_error")"])
            return stamped
        }
    }

    // MARK: - Saving

    /// Saves a token the provider issued, stamped with this configuration's binding.
    ///
    /// A token the provider issued is never dropped: when the store fails, the
    /// token is kept in memory (``load(account:)`` returns it), used, and
    /// saved again on the next occasion (``retryUnsaved(account:)``).
    ///
    /// - Returns: the token as saved, and the store's error when it was not.
    func persist(_ token: AccessToken, account: String) async -> (token: AccessToken, storeError: OAuth2Error?) {
        var token = token
        token.binding = configuration.binding
        do {
            try await store.save(token, account: account)
            updateUnsaved { _ = $0.removeValue(forKey: AccountKey(account)) }
            return (token, nil)
        } catch {
            let failure = OAuth2Error(storeError: error, doing: "write")
            updateUnsaved { $0[AccountKey(account)] = UnsavedToken(token: token, lastAttempt: clock.now()) }
            logger.warning(
                "the token store could not save a token the provider issued; it is kept in memory and saved again later",
                metadata: ["oauth2.account": "\(account)", "oauth2.error": "\(failure.code)"]
            )
            return (token, failure)
        }
    }

    /// What adopting a token did: the token as saved, the store's failure
    /// if it could not save it (the token is then kept in memory), and the
    /// account's token before.
    struct Adoption: Sendable {
        var token: AccessToken
        var storeError: OAuth2Error?
        var previous: AccessToken?
    }

    /// Saves `token` as the account's under the account lock, so that a
    /// refresh of the account's previous grant in another process cannot
    /// overwrite it.
    ///
    /// - Throws: the lock's failure (`lock_timeout`, `store_error`); nothing
    ///   is saved then.
    func adopt(_ token: AccessToken, account: String) async throws(OAuth2Error) -> Adoption {
        do {
            return try await withAccountLock(account) {
                let previous = await self.previousToken(account: account)
                let (saved, storeError) = await self.persist(token, account: account)
                return Adoption(token: saved, storeError: storeError, previous: previous)
            }
        } catch let error as OAuth2Error {
            throw error
        } catch {
            throw OAuth2Error(code: .storeError, message: "the account lock failed: \(type(of: error))")
        }
    }

    /// Saves a token a grant just issued as the account's: under the account
    /// lock, or, when the lock cannot be taken (`lock_timeout`, or the task is
    /// cancelled while waiting for it), without it, since the provider has
    /// issued it and it is never dropped.
    ///
    /// - Returns: the adoption; its `previous` is `nil` when the lock was not taken.
    func adoptIssued(_ token: AccessToken, account: String) async -> Adoption {
        do throws(OAuth2Error) {
            return try await adopt(token, account: account)
        } catch {
            let (saved, storeError) = await persist(token, account: account)
            return Adoption(token: saved, storeError: storeError, previous: nil)
        }
    }

    /// The account's stored token before an adoption; another provider's
    /// token or an unreadable one is replaced and not returned.
    private func previousToken(account: String) async -> AccessToken? {
        do throws(OAuth2Error) {
            return try await load(account: account)
        } catch {
            logger.debug(
                "adopting over a token that cannot be used", metadata: ["oauth2.account": "\(account)", "oauth2.error": "\(error.code)"])
            return nil
        }
    }

    /// Whether the account has a token the store could not save, last tried
    /// longer than ``unsavedRetryInterval`` ago.
    ///
    /// Every signed request asks: with nothing unsaved (the usual case) it
    /// costs one atomic load: no lock, no allocation and no clock read.
    func unsavedNeedsRetry(account: String) -> Bool {
        guard anyUnsaved.load(ordering: .acquiring) else { return false }
        let now = clock.now()
        return unsaved.withLock { unsaved in
            guard let entry = unsaved[AccountKey(account)] else { return false }
            return now.timeIntervalSince(entry.lastAttempt) >= Self.unsavedRetryInterval.timeInterval
        }
    }

    /// Tries again to save the account's unsaved token, under the account lock.
    ///
    /// - Returns: `nil` when saved (or nothing was unsaved), else the store's error.
    func retryUnsaved(account: String) async -> OAuth2Error? {
        do {
            return try await withAccountLock(account) { () async -> OAuth2Error? in
                guard let token = self.unsaved.withLock({ $0[AccountKey(account)]?.token }) else { return nil }
                let (_, error) = await self.persist(token, account: account)
                return error
            }
        } catch {
            unsaved.withLock { $0[AccountKey(account)]?.lastAttempt = clock.now() }
            return OAuth2Error(storeError: error, doing: "lock")
        }
    }

    // MARK: - Deleting

    /// Deletes the account's token from the store, then forgets a token kept
    /// unsaved: only once the store no longer holds an older one.
    func delete(account: String) async throws(OAuth2Error) {
        do {
            try await store.delete(account: account)
        } catch {
            throw OAuth2Error(storeError: error, doing: "delete")
        }
        updateUnsaved { _ = $0.removeValue(forKey: AccountKey(account)) }
    }

    /// Adds or removes unsaved tokens, keeping `anyUnsaved` in step.
    private func updateUnsaved(_ change: (inout [AccountKey: UnsavedToken]) -> Void) {
        unsaved.withLock { unsaved in
            change(&unsaved)
            anyUnsaved.store(!unsaved.isEmpty, ordering: .releasing)
        }
    }

    private func hasUnsaved(_ key: AccountKey) -> Bool {
        unsaved.withLock { $0[key] != nil }
    }

    // MARK: - The account lock

    /// Runs `body` holding the store's lock of `account` (every process
    /// sharing the store waits for it), waiting at most ``accountLockWait``.
    ///
    /// When `body` leaves a token the store could not save (``persist(_:account:)``),
    /// the lock is not released with its result: the vault keeps it
    /// (``KeptAccountLock``) and saves the token again, every
    /// ``unsavedRetryInterval`` doubling up to ``keptLockRetryCap``, until
    /// the store takes it. Until then other processes and providers on the
    /// store wait for the lock instead of reading the older token and spending
    /// its rotated refresh token; this provider's own work on the account runs
    /// under the kept lock. A process that ends releases it (the kernel, or
    /// PostgreSQL, does), and with it the token: ``OAuth2Client/saveUnsavedToken(waitingUpTo:)``
    /// is how a process about to exit waits for the store.
    ///
    /// `body` runs in a task of its own, so that the lock can outlive the
    /// call: cancelling the caller does not stop it.
    ///
    /// - Throws: what `body` throws, unchanged; the lock's failures as
    ///   ``OAuth2Error`` (`lock_timeout`, `store_error`).
    func withAccountLock<Result: Sendable>(_ account: String, _ body: @escaping @Sendable () async throws -> Result) async throws
        -> Result
    {
        let key = AccountKey(account)
        if let kept = keptLocks.withLock({ $0[key] }) {
            let outcome: Swift.Result<Result, any Error>? = await withCheckedContinuation { continuation in
                let queued = kept.enqueue {
                    do {
                        continuation.resume(returning: .success(try await body()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
                if !queued { continuation.resume(returning: nil) }
            }
            if let outcome { return try outcome.get() }
        }
        return try await withCheckedThrowingContinuation { continuation in
            Task { await self.holdLock(account, key, body, continuation) }
        }
    }

    /// Takes the store's lock, runs `body`, resumes the caller with its
    /// result, and keeps the lock while the account has an unsaved token.
    private func holdLock<Result: Sendable>(
        _ account: String,
        _ key: AccountKey,
        _ body: @Sendable () async throws -> Result,
        _ continuation: CheckedContinuation<Result, any Error>
    ) async {
        let waitStarted = ContinuousClock.now
        var resumed = false
        do {
            try await store.withLock(account: account, timeout: accountLockWait) { () async -> Void in
                telemetry.lockWaited(ContinuousClock.now - waitStarted)
                do {
                    continuation.resume(returning: try await body())
                } catch {
                    continuation.resume(throwing: error)
                }
                resumed = true
                await keepWhileUnsaved(account, key)
            }
        } catch {
            if !resumed {
                continuation.resume(throwing: OAuth2Error(storeError: error, doing: "lock"))
            } else {
                logger.debug("releasing the account lock failed", metadata: ["oauth2.error": "\(type(of: error))"])
            }
        }
    }

    /// Keeps the account's lock, running this provider's work on the account
    /// and saving the unsaved token again, until the store has taken it.
    private func keepWhileUnsaved(_ account: String, _ key: AccountKey) async {
        guard hasUnsaved(key) else { return }
        let kept = KeptAccountLock()
        keptLocks.withLock { $0[key] = kept }
        logger.debug("the account's lock is kept until the store saves the token it refused")
        var delay = Self.unsavedRetryInterval
        var nextAttempt = ContinuousClock.now + delay
        while true {
            let saved = !hasUnsaved(key)
            let jobs = kept.takeJobs(closingIfNone: saved)
            if jobs.isEmpty && saved { break }
            for job in jobs { await job() }
            guard jobs.isEmpty else { continue }
            let now = ContinuousClock.now
            if now >= nextAttempt {
                if let token = unsaved.withLock({ $0[key]?.token }) {
                    _ = await persist(token, account: account)
                }
                delay = min(delay * 2, Self.keptLockRetryCap)
                nextAttempt = ContinuousClock.now + delay
            } else {
                await kept.waitForJob(timeout: nextAttempt - now)
            }
        }
        keptLocks.withLock { locks in
            if locks[key] === kept { locks[key] = nil }
        }
        logger.debug("the store saved the token it had refused; the account's lock is released")
    }
}

/// A token the store could not save, kept by the vault until it can.
struct UnsavedToken: Sendable {
    var token: AccessToken
    var lastAttempt: Date
}
