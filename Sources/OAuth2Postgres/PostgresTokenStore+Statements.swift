import Logging
import PostgresNIO
import Synchronization

/// Statements, each bounded in time: postgres-nio bounds none.
extension PostgresTokenStore {
    /// No answer to a statement in time.
    struct StatementTimeout: Error {
        var timeout: Duration
    }

    /// Runs a statement whose rows do not matter.
    func execute(_ query: PostgresQuery, on connection: PostgresConnection) async throws {
        _ = try await values(query, as: Bool?.self, decoding: false, on: connection)
    }

    /// Runs a statement and decodes its rows' single column, waiting at most
    /// ``connectionTimeout`` for the whole answer.
    ///
    /// postgres-nio does not bound a statement, and one sent on a connection
    /// whose server process was just terminated can wait for ever; the store
    /// gives up, closes that connection (whatever state it is in) and fails.
    func values<T: PostgresDecodable & Sendable>(
        _ query: PostgresQuery,
        as type: T.Type,
        decoding: Bool = true,
        on connection: PostgresConnection
    ) async throws -> [T] {
        let logger = logger
        let timeout = connectionTimeout
        let outcome = Mutex<CheckedContinuation<[T], any Error>?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            outcome.withLock { $0 = continuation }
            let finish = { @Sendable (result: Swift.Result<[T], any Error>) -> Bool in
                guard
                    let waiting = outcome.withLock({ value in
                        defer { value = nil }
                        return value
                    })
                else { return false }
                waiting.resume(with: result)
                return true
            }
            // Cancelled as soon as the statement ends: no sleeping task is
            // left behind per statement.
            let timer = Task {
                do { try await Task.sleep(for: timeout) } catch { return }
                if finish(.failure(StatementTimeout(timeout: timeout))) {
                    // A statement ignores task cancellation; closing its connection ends it.
                    Self.close(connection)
                }
            }
            Task {
                let result: Swift.Result<[T], any Error>
                do {
                    let rows = try await connection.query(query, logger: logger)
                    var values: [T] = []
                    if decoding {
                        for try await value in rows.decode(T.self) { values.append(value) }
                    } else {
                        for try await _ in rows {}
                    }
                    result = .success(values)
                } catch {
                    result = .failure(error)
                }
                _ = finish(result)
                timer.cancel()
            }
        }
    }

    /// Closes a connection in the background: closing one that hangs may hang too.
    static func close(_ connection: PostgresConnection) {
        Task { try? await connection.close() }
    }
}
