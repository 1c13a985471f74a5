#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

public import Logging

/// One provider as an app uses it: the configuration, the transport, the
/// token store, a clock and a logger, shared by every ``OAuth2Client``.
///
/// Create one per provider at start-up, then a cheap client per account
/// (`provider.client(account: userID)`), as many and as short-lived as you
/// like: refresh is single-flight per account across all the clients of a
/// provider, and a redirect's `state` is accepted once across all of them.
/// Thread-safe.
public final class OAuth2Provider: Sendable {
    /// The configuration, validated.
    public let configuration: OAuth2Configuration
    /// The transport every request goes through.
    public let transport: any HTTPTransport
    /// Where tokens are kept.
    public let store: any TokenStore
    /// The clock expiry is read from and device polling sleeps on.
    public let clock: any OAuth2Clock
    /// The logger; the framework logs at debug and trace only, never a secret.
    public let logger: Logger
    /// Where metrics and spans go: the app's bootstrapped backends unless given others.
    public let telemetry: OAuth2Telemetry

    let refreshCoordinator = RefreshCoordinator()
    let usedStates = UsedStates()
    /// Tokens the provider issued that the store could not save, by account.
    let unsaved = LockedValue<[AccountKey: UnsavedToken]>([:])
    /// The store locks kept while an account's token waits to be saved.
    let keptLocks = LockedValue<[AccountKey: KeptAccountLock]>([:])
    /// Whether `unsaved` has any entry, readable without its lock: every
    /// signed request asks, and with several threads sending, taking a lock
    /// shared by all the provider's clients for that made them wait on each other.
    private let anyUnsaved = Atomic<Bool>(false)
    /// Grant types whose tokens can be renewed by running the grant again.
    let renewableGrantTypes: Set<String>
    /// `configuration.expirySkew` in seconds, converted once: every signed
    /// request compares its token's expiry against it, and the conversion
    /// divides a 128-bit count of attoseconds.
    let expirySkewSeconds: Double
    /// OpenID Connect: the ID token verifier and the provider's key set, when configured.
    let idTokenVerifier: IDTokenVerifier?
    let keySet: KeySetCache?

    /// Creates a provider.
    ///
    /// - Parameters:
    ///   - configuration: the provider's endpoints, client and policies; validated here.
    ///   - store: defaults to an ``InMemoryTokenStore``.
    ///   - transport: typically one ``CurlTransport`` for the whole app; the caller shuts it down.
    ///   - clock: where expiry is read and device polling sleeps; tests pass a manual one.
    ///   - logger: defaults to a logger that discards everything.
    ///   - telemetry: defaults to the process's swift-metrics and
    ///     swift-distributed-tracing backends (no-ops until bootstrapped).
    /// - Throws: ``OAuth2Error`` when the configuration is invalid (`insecure_endpoint`, `invalid_configuration`).
    public init(
        configuration: OAuth2Configuration,
        store: any TokenStore = InMemoryTokenStore(),
        transport: any HTTPTransport,
        clock: any OAuth2Clock = SystemClock(),
        logger: Logger = Logger(label: "swift-oauth2", factory: { _ in SwiftLogNoOpLogHandler() }),
        telemetry: OAuth2Telemetry = .global
    ) throws(OAuth2Error) {
        try configuration.validate()
        self.configuration = configuration
        self.store = store
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.telemetry = telemetry
        self.renewableGrantTypes = configuration.renewableGrantTypes
        expirySkewSeconds = configuration.expirySkew.timeInterval
        if let openID = configuration.openID, let issuer = configuration.issuer {
            idTokenVerifier = IDTokenVerifier(settings: openID, issuer: issuer, clientID: configuration.clientID)
            keySet = KeySetCache(
                settings: openID,
                transport: transport,
                clock: clock,
                timeout: configuration.requestTimeout,
                maxSize: configuration.maxResponseSize
            )
        } else {
            idTokenVerifier = nil
            keySet = nil
        }
    }

    /// A client for one account, such as a user id.
    ///
    /// Cheap: create one per request if that suits the app.
    public func client(account: String = "default", delegate: (any OAuth2ClientDelegate)? = nil) -> OAuth2Client {
        OAuth2Client(provider: self, account: account, delegate: delegate)
    }

    // MARK: - I/O with typed errors

    /// Sends a request, translating transport failures into ``OAuth2Error``.
    func perform(_ request: HTTPTransportRequest) async throws(OAuth2Error) -> HTTPTransportResponse {
        try await OAuth2Error.performing(request, on: transport)
    }

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

    /// How long after a failed save the client tries again, at the earliest;
    /// a kept lock's first retry (``withAccountLock(_:_:)``).
    static let unsavedRetryInterval: Duration = .seconds(1)

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

    /// Runs `body` holding the store's lock of `account` (every process
    /// sharing the store waits for it), waiting at most ``accountLockWait``.
    ///
    /// When `body` leaves a token the store could not save (``persist(_:account:)``),
    /// the lock is not released with its result: the provider keeps it
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

    private func hasUnsaved(_ key: AccountKey) -> Bool {
        unsaved.withLock { $0[key] != nil }
    }

    /// The longest a kept lock waits between two saves of the token the store refused.
    static let keptLockRetryCap: Duration = .seconds(10)

    /// How long a caller waits for an account's lock: as long as a holder
    /// that is making progress can hold it. A refresh holds it for a token
    /// request and up to two fetches of the key set (a cached set too old,
    /// then an unknown key), and when the provider refuses the refresh token
    /// of a renewable grant, as long again to run that grant: six request
    /// timeouts, and a little for the store's own reads and writes.
    var accountLockWait: Duration {
        configuration.requestTimeout * 6 + .seconds(5)
    }
}

/// A token the store could not save, kept by the provider until it can.
struct UnsavedToken: Sendable {
    var token: AccessToken
    var lastAttempt: Date
}
