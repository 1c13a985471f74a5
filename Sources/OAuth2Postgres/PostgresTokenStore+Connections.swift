import Logging
import OAuth2
import PostgresNIO

/// Where a store call runs: on the connection of the account lock its task
/// holds, else on one leased from the pool, waited for at most
/// `connectionTimeout`.
extension PostgresTokenStore {
    /// No connection came from the pool in time.
    struct ConnectionTimeout: Error {
        var timeout: Duration
    }

    /// A connection of ``UnreachableDatabase/failFast(probing:)`` could not be made.
    struct Unreachable: Error {
        var error: any Error
    }

    private enum LeaseEvent: Sendable {
        case leased(PostgresConnection)
        case failed(any Error)
        case unreachable(any Error)
        case timedOut
    }

    /// Runs `body` on a connection from the pool, waiting at most `timeout`
    /// for one: the pool itself waits as long as it takes, retrying while
    /// the database is down, and a store call must end with an error instead
    /// (at once with ``UnreachableDatabase/failFast(probing:)``: see ``startProbe(_:events:)``).
    ///
    /// The connection is leased in a child task that keeps it until `body`
    /// is done; `body` runs in the calling task (it may not escape).
    func withLeasedConnection<T: Sendable>(
        timeout: Duration,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let (events, eventSink) = AsyncStream<LeaseEvent>.makeStream()
        let (done, doneSignal) = AsyncStream<Void>.makeStream()
        let client = client
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await client.withConnection { connection in
                        eventSink.yield(.leased(connection))
                        for await _ in done {}
                    }
                } catch {
                    eventSink.yield(.failed(error))
                }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                eventSink.yield(.timedOut)
            }
            let probe = startProbe(unreachable, events: eventSink)
            defer {
                timer.cancel()
                probe?.cancel()
                doneSignal.finish()
            }
            var iterator = events.makeAsyncIterator()
            switch await iterator.next() {
            case .leased(let connection)?:
                timer.cancel()
                probe?.cancel()
                return try await body(connection)
            case .failed(let error)?:
                throw error
            case .unreachable(let error)?:
                group.cancelAll()
                throw Unreachable(error: error)
            case .timedOut?:
                group.cancelAll()
                throw ConnectionTimeout(timeout: timeout)
            case nil:
                group.cancelAll()
                throw CancellationError()
            }
        }
    }

    /// For ``UnreachableDatabase/failFast(probing:)``: when no connection
    /// came from the pool within ``UnreachableDatabase/probeDelay``, makes
    /// one directly and reports it when it cannot be made; one that can is
    /// closed at once, and the call goes on waiting for the pool.
    private func startProbe(_ unreachable: UnreachableDatabase, events: AsyncStream<LeaseEvent>.Continuation) -> Task<Void, Never>? {
        guard case .failFast(let configuration) = unreachable.kind else { return nil }
        return Task {
            do {
                try await Task.sleep(for: UnreachableDatabase.probeDelay)
            } catch {
                return
            }
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, id: 0,
                    logger: Logger(label: "swift-oauth2.postgres.probe") { _ in SwiftLogNoOpLogHandler() })
                Self.close(connection)
            } catch {
                if !Task.isCancelled {
                    events.yield(.unreachable(error))
                }
            }
        }
    }

    /// Runs `body` on the connection holding `account`'s lock when this task
    /// holds it, else on one leased from the pool; the table is made first.
    ///
    /// - Parameter action: what the message says could not be done ("save the token of account "x"").
    @discardableResult
    func run<T: Sendable>(
        _ action: String,
        account: String,
        _ body: (PostgresConnection) async throws -> T
    ) async throws(OAuth2Error) -> T {
        try await prepareTable()
        do {
            if let holder = Self.holder, holder.store == ObjectIdentifier(self) {
                return try await body(holder.connection)
            }
            return try await withLeasedConnection(timeout: connectionTimeout, body)
        } catch {
            throw storeError(error, doing: action)
        }
    }
}
