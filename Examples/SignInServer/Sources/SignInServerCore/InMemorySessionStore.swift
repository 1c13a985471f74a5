import Synchronization
import Foundation
import OAuth2

/// The sessions of this process, in memory, bounded in time and number:
/// the default ``SessionStore``.
///
/// Good enough for an example and for a single instance. Several instances
/// keep sessions in a shared store instead: ``PostgresSessionStore``.
///
/// Bounds: a pending sign-in expires after ``pendingLifetime``; a session
/// unused for ``idleLifetime`` is forgotten; past ``capacity`` sessions the
/// least recently used one is dropped, so anonymous visitors hitting
/// `/login` in a loop cannot grow the map without limit.
///
/// Thread-safe. Its calls never throw nor wait.
public final class InMemorySessionStore: SessionStore {
    /// How long a started sign-in may take before its callback is refused.
    public let pendingLifetime: Duration
    /// How long an unused session lives.
    public let idleLifetime: Duration
    /// The most sessions kept at once.
    public let capacity: Int

    private let sessions = Mutex([String: Session]())
    private let now: @Sendable () -> Date

    /// Creates an empty store.
    ///
    /// - Parameters:
    ///   - pendingLifetime: 10 minutes by default.
    ///   - idleLifetime: 12 hours by default.
    ///   - capacity: 10,000 sessions by default.
    ///   - now: the clock; tests pass their own.
    public init(
        pendingLifetime: Duration = .seconds(600),
        idleLifetime: Duration = .seconds(12 * 3600),
        capacity: Int = 10_000,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.pendingLifetime = pendingLifetime
        self.idleLifetime = idleLifetime
        self.capacity = max(1, capacity)
        self.now = now
    }

    /// How many sessions are kept.
    public var count: Int {
        sessions.withLock { $0.count }
    }

    public func account(of id: String?) -> String? {
        withLiveSession(id) { $0.account }
    }

    public func pendingSignIn(of id: String?) -> PendingAuthorization? {
        withLiveSession(id) { $0.pending }
    }

    public func takePendingSignIn(of id: String?, state: String) -> PendingAuthorization? {
        withLiveSession(id) { session in
            guard let pending = session.pending, SessionID.digest(pending.state) == SessionID.digest(state) else {
                return nil
            }
            session.pending = nil
            session.pendingSince = nil
            return pending
        }
    }

    public func startSignIn(_ pending: PendingAuthorization, session id: String?) -> String {
        let now = now()
        return sessions.withLock { sessions in
            var sessionID = id ?? ""
            if id == nil || Self.live(sessions[sessionID], at: now, pendingLifetime: pendingLifetime, idleLifetime: idleLifetime) == nil {
                if let id { sessions.removeValue(forKey: id) }
                sessionID = insertNew(into: &sessions, now: now)
            }
            sessions[sessionID]?.pending = pending
            sessions[sessionID]?.pendingSince = now
            sessions[sessionID]?.lastSeen = now
            return sessionID
        }
    }

    public func completeSignIn(session id: String?, account: String) -> String {
        let now = now()
        return sessions.withLock { sessions in
            if let id { sessions.removeValue(forKey: id) }
            let newID = insertNew(into: &sessions, now: now)
            sessions[newID]?.account = account
            return newID
        }
    }

    public func forgetAccount(of id: String?) {
        guard let id else { return }
        sessions.withLock { sessions in
            sessions[id]?.account = nil
            if sessions[id]?.pending == nil {
                sessions.removeValue(forKey: id)
            }
        }
    }

    public func endAll(account: String) {
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.account != account }
        }
    }

    public func end(_ id: String?) {
        guard let id else { return }
        sessions.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// Runs `body` on the live session of `id`, after dropping what expired,
    /// and keeps what it changed; `nil` when there is no such session.
    private func withLiveSession<T>(_ id: String?, _ body: (inout Session) -> T?) -> T? {
        guard let id else { return nil }
        let now = now()
        return sessions.withLock { (sessions: inout [String: Session]) -> T? in
            guard var session = Self.live(sessions[id], at: now, pendingLifetime: pendingLifetime, idleLifetime: idleLifetime) else {
                sessions.removeValue(forKey: id)
                return nil
            }
            session.lastSeen = now
            let result = body(&session)
            sessions[id] = session
            return result
        }
    }

    /// The session with its expired parts removed, or `nil` when nothing of it is left.
    private static func live(_ session: Session?, at now: Date, pendingLifetime: Duration, idleLifetime: Duration) -> Session? {
        guard var session else { return nil }
        if now.timeIntervalSince(session.lastSeen) > idleLifetime.seconds {
            return nil
        }
        if let since = session.pendingSince, now.timeIntervalSince(since) > pendingLifetime.seconds {
            session.pending = nil
            session.pendingSince = nil
        }
        if session.pending == nil && session.account == nil {
            return nil
        }
        return session
    }

    /// Adds an empty session under a fresh id, making room first when full.
    private func insertNew(into sessions: inout [String: Session], now: Date) -> String {
        if sessions.count >= capacity {
            for (id, session) in sessions
            where Self.live(session, at: now, pendingLifetime: pendingLifetime, idleLifetime: idleLifetime) == nil {
                sessions.removeValue(forKey: id)
            }
        }
        while sessions.count >= capacity, let oldest = sessions.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
            sessions.removeValue(forKey: oldest)
        }
        var id = SessionID.make()
        while sessions[id] != nil { id = SessionID.make() }
        sessions[id] = Session(lastSeen: now)
        return id
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
