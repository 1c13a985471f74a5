extension CurlTransport {
    /// An executor that runs tasks on the transport's own thread, or `nil`
    /// when the transport failed to start.
    ///
    /// By default a request costs two thread hand-offs besides the network: the
    /// caller's task hands it to the transport thread, and the transport thread
    /// resumes the task on Swift's global executor. A task that prefers this
    /// executor (`withTaskExecutorPreference(transport.executor) { ... }` or
    /// `Task(executorPreference: transport.executor) { ... }`) runs on the
    /// transport thread instead: it hands its request to libcurl and gets its
    /// response without waking another thread. Measured on a loopback server,
    /// a loop of sequential requests this way takes about a fifth less time
    /// (BENCHMARKS.md).
    ///
    /// Use it for a task that sends requests one after another and does
    /// little else, such as a command-line tool's or a worker's request loop.
    /// Everything such a task and its child tasks do runs on this one thread,
    /// between libcurl's turns: blocking there, or heavy work such as decoding
    /// a large body, stalls every request of the transport meanwhile, and many
    /// concurrent callers are faster on the global executor, which has every
    /// core. Their requests stay on this thread, never on a second one
    /// (``Configuration/maxThreads``), and never start one: while only such
    /// tasks send, they have the whole connection limits; once other tasks'
    /// requests have started a second thread, this one has half of them.
    /// After ``shutdown()`` such tasks go on on the global executor.
    public var executor: (any TaskExecutor)? {
        if case .success(let engine) = engine { return engine }
        return nil
    }
}
