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
/// unused for ``idleLifetime`` is forgotten. Anonymous sessions (a sign-in
/// started, nobody signed in yet) and signed-in ones have a budget of
/// ``capacity`` each: past it, a new anonymous session drops the oldest
/// anonymous one, in constant time, so visitors hitting `/login` in a loop
/// neither grow the map without limit nor push a signed-in user out; a new
/// sign-in past both budgets drops the least recently used session.
///
/// Thread-safe. Its calls never throw nor wait.
public final class InMemorySessionStore: SessionStore {
    /// How long a started sign-in may take before its callback is refused.
    public let pendingLifetime: Duration
    /// How long an unused session lives.
    public let idleLifetime: Duration
    /// The most anonymous sessions kept at once, and the most signed-in ones.
    public let capacity: Int

    private struct State: ~Copyable {
        var sessions: [String: Session] = [:]
        /// The ids of anonymous sessions in the order they were made, from
        /// `head` on; an id whose session is gone or signed in meanwhile is
        /// skipped when it comes up (and compacted away now and then).
        var anonymous: [String] = []
        var head = 0
    }

    private let state = Mutex(State())
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
        state.withLock { $0.sessions.count }
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
        return state.withLock { state in
            var sessionID = id ?? ""
            if id == nil
                || Self.live(state.sessions[sessionID], at: now, pendingLifetime: pendingLifetime, idleLifetime: idleLifetime) == nil
            {
                if let id { state.sessions.removeValue(forKey: id) }
                sessionID = insertAnonymous(into: &state, now: now)
            }
            state.sessions[sessionID]?.pending = pending
            state.sessions[sessionID]?.pendingSince = now
            state.sessions[sessionID]?.lastSeen = now
            return sessionID
        }
    }

    public func completeSignIn(session id: String?, account: String) -> String {
        let now = now()
        return state.withLock { state in
            if let id { state.sessions.removeValue(forKey: id) }
            let newID = insertSignedIn(into: &state, account: account, now: now)
            return newID
        }
    }

    public func forgetAccount(of id: String?) {
        guard let id else { return }
        state.withLock { state in
            state.sessions[id]?.account = nil
            if state.sessions[id]?.pending == nil {
                state.sessions.removeValue(forKey: id)
            }
        }
    }

    /// Ends every session of `account`, the account compared by its exact
    /// bytes, as the token store keys it: two names that Swift's `==` calls
    /// equal (é composed or decomposed) are two accounts there, and here.
    public func endAll(account: String) {
        state.withLock { state in
            state.sessions = state.sessions.filter { !($0.value.account.map { Self.sameBytes($0, account) } ?? false) }
        }
    }

    public func end(_ id: String?) {
        guard let id else { return }
        state.withLock { _ = $0.sessions.removeValue(forKey: id) }
    }

    static func sameBytes(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    /// Runs `body` on the live session of `id`, after dropping what expired,
    /// and keeps what it changed; `nil` when there is no such session.
    private func withLiveSession<T>(_ id: String?, _ body: (inout Session) -> T?) -> T? {
        guard let id else { return nil }
        let now = now()
        return state.withLock { (state: inout State) -> T? in
            guard var session = Self.live(state.sessions[id], at: now, pendingLifetime: pendingLifetime, idleLifetime: idleLifetime)
            else {
                state.sessions.removeValue(forKey: id)
                return nil
            }
            session.lastSeen = now
            let result = body(&session)
            state.sessions[id] = session
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

    /// Adds an empty anonymous session under a fresh id; past the anonymous
    /// budget, the oldest anonymous session goes first (never a signed-in one).
    private func insertAnonymous(into state: inout State, now: Date) -> String {
        while state.anonymous.count - state.head >= capacity, let oldest = Self.popAnonymous(&state) {
            state.sessions.removeValue(forKey: oldest)
        }
        let id = Self.freshID(in: state.sessions)
        state.sessions[id] = Session(lastSeen: now)
        state.anonymous.append(id)
        // Ids skipped or signed in meanwhile are dropped from the queue once it has grown to twice the budget.
        if state.anonymous.count > 2 * capacity {
            let sessions = state.sessions
            state.anonymous = state.anonymous[state.head...].filter { sessions[$0]?.account == nil && sessions[$0] != nil }
            state.head = 0
        }
        return id
    }

    /// Adds a signed-in session under a fresh id; past both budgets the least
    /// recently used anonymous session goes first, else the least recently used one.
    private func insertSignedIn(into state: inout State, account: String, now: Date) -> String {
        while state.sessions.count >= 2 * capacity {
            if let oldest = Self.popAnonymous(&state) {
                state.sessions.removeValue(forKey: oldest)
            } else if let oldest = state.sessions.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                state.sessions.removeValue(forKey: oldest)
            } else {
                break
            }
        }
        let id = Self.freshID(in: state.sessions)
        var session = Session(lastSeen: now)
        session.account = account
        state.sessions[id] = session
        return id
    }

    /// The oldest id of the queue whose session is still anonymous, taken off it.
    private static func popAnonymous(_ state: inout State) -> String? {
        while state.head < state.anonymous.count {
            let id = state.anonymous[state.head]
            state.head += 1
            if let session = state.sessions[id], session.account == nil { return id }
        }
        return nil
    }

    private static func freshID(in sessions: [String: Session]) -> String {
        var id = SessionID.make()
        while sessions[id] != nil { id = SessionID.make() }
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
