import OAuth2

/// Where the visitors' sessions live: a random session id (the cookie's
/// value) mapped to the pending sign-in and the signed-in account.
///
/// ``InMemorySessionStore`` is the default, for one instance.
/// ``PostgresSessionStore`` shares the sessions among every instance that
/// uses the same database, so that any instance serves any request.
///
/// What every store keeps to: a pending sign-in expires after the store's
/// pending lifetime, an unused session after its idle lifetime, and neither
/// is served once expired; a new session always gets a new random id, never
/// one the browser chose; a pending sign-in is taken once, whatever the
/// number of instances; the session id is never logged nor put in an error.
///
/// Implementations throw ``SessionStoreError`` only.
public protocol SessionStore: Sendable {
    /// The signed-in account of a session, or `nil` when the id is unknown,
    /// expired, or not signed in. Marks the session used.
    func account(of id: String?) async throws -> String?

    /// The pending sign-in of a session, or `nil` when there is none or it
    /// expired. It stays pending: the callback uses
    /// ``takePendingSignIn(of:state:)``.
    func pendingSignIn(of id: String?) async throws -> PendingAuthorization?

    /// Takes the session's pending sign-in when its `state` is the one given:
    /// the pending sign-in is gone afterwards, so of two callbacks carrying
    /// that state (a replay, or the same redirect delivered to two
    /// instances at once) only one gets it. A callback with another state
    /// takes nothing, so a forged one cannot spend the visitor's sign-in.
    ///
    /// - Returns: the pending sign-in, or `nil` when there is none, it
    ///   expired, its state differs, or it was taken already.
    func takePendingSignIn(of id: String?, state: String) async throws -> PendingAuthorization?

    /// Remembers a sign-in that was just started, replacing an earlier pending one.
    ///
    /// - Parameter id: the visitor's current session id, if any.
    /// - Returns: the session id to put in the cookie: the same when it was
    ///   live, else a new one.
    func startSignIn(_ pending: PendingAuthorization, session id: String?) async throws -> String

    /// Finishes a sign-in: the old session ends and a new one, under a new
    /// id, holds the account (so an id planted before the sign-in, session
    /// fixation, is worthless after it).
    ///
    /// - Returns: the new session id for the cookie.
    func completeSignIn(session id: String?, account: String) async throws -> String

    /// Forgets the session's account (its token was lost); a pending sign-in stays.
    func forgetAccount(of id: String?) async throws

    /// Ends every session signed in as `account`, on every instance that shares the store.
    func endAll(account: String) async throws

    /// Ends a session.
    func end(_ id: String?) async throws
}

/// A session store could not do what was asked (its database is down, say).
///
/// The description says what failed and why in general terms (a SQLSTATE, a
/// timeout); never a session id, a state, a verifier or an account's data.
public struct SessionStoreError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
