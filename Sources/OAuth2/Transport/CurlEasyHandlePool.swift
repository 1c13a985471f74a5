/// The idle easy handles of one engine, kept for reuse so that a request
/// finds its connection's handle configured (``CurlEasyHandle/Kind``) and no
/// handle is created per request.
///
/// Belongs to whoever drives libcurl (the engine thread or a leading caller).
struct CurlEasyHandlePool {
    /// The most idle handles kept: ``CurlTransport/Configuration/maxConnections``,
    /// at least 1; a handle beyond them is cleaned up when it comes back.
    let capacity: Int
    private var idle: [CurlEasyHandle] = []

    init(capacity: Int) {
        self.capacity = Swift.max(capacity, 1)
    }

    /// An idle handle, or a new one; `nil` when libcurl cannot create one.
    mutating func take() -> CurlEasyHandle? {
        idle.popLast() ?? CurlEasyHandle()
    }

    /// Keeps a handle for reuse. It still points at the transfer's header
    /// list, body and context, which libcurl reads only during a transfer;
    /// the next `configure` replaces them.
    mutating func recycle(_ easy: CurlEasyHandle) {
        if idle.count < capacity {
            idle.append(easy)
        }
    }

    /// Frees every idle handle (the engine stops).
    mutating func removeAll() {
        idle.removeAll()
    }
}
