/// A request as ``HostAdmission`` sees it: an identity and the host it goes to.
protocol HostAdmissionRequest: AnyObject {
    /// The host and port the request goes to, lowercased ("example.com:443").
    /// Asked for only while hosts are counted; may be made on first use.
    var hostKey: String { get }
}

/// How many transfers each host has in libcurl, and the requests held back
/// until their host has room, each until its own deadline.
///
/// The engine gives libcurl at most a limit of transfers per host
/// (``CurlTransport/Configuration/maxConnectionsPerHost``, half once a second
/// engine has started beside it); the others wait here, in order. libcurl's
/// own per-host limit (`CURLMOPT_MAX_HOST_CONNECTIONS`) is not used: libcurl
/// 7.88 queues the transfers beyond it, wakes one per transfer that ends, and
/// can lose such a wakeup. In a storm of 1,000 requests, transfers then sat
/// without a connection while every connection was idle, until the engine
/// thread's 5-second poll ended. Nor does it let a queued transfer time out
/// before a connection frees up.
///
/// A pure value, owned by whoever drives libcurl (the engine thread or a
/// leading caller): time comes in as CLOCK_MONOTONIC nanoseconds, the limit
/// with each event (another thread may lower it), and the owner carries out
/// the ``Action``s: it starts a transfer, then reports ``started(_:)``; it
/// reports ``ended(_:limit:)`` when one leaves libcurl.
///
/// While fewer transfers than the limit are in libcurl and none is held
/// back, no host can be at its limit: a request then skips the table (its
/// host's key made and looked up three times cost 1,300 instructions per
/// request). Counting starts when a request arrives with that many in
/// libcurl, and stops when the table empties.
struct HostAdmission<Request: HostAdmissionRequest> {
    /// What to do with a request that arrives (``admit(_:timeoutMilliseconds:inLibcurl:limit:now:)``).
    enum Admission: Equatable {
        /// Start it now.
        case start
        /// It is held back until its host has room, or its deadline.
        case held
    }

    /// What the owner does next (``nextAction(limit:now:)``).
    enum Action {
        /// Start this held request, its timeout shortened to what is left.
        case start(Request, timeoutMilliseconds: Int)
        /// Fail this held request: its timeout ran out before its host had room.
        case timeOut(Request)
    }

    /// A request held back and when its timeout runs out (CLOCK_MONOTONIC ns).
    private struct Held {
        let request: Request
        let deadline: Int64
    }

    /// The transfers of one host: how many libcurl has, and those held back
    /// until it has fewer than the limit, oldest first.
    private struct HostQueue {
        var running = 0
        var held: [Held] = []
        /// The first of `held` not taken yet.
        var next = 0

        var hasHeld: Bool { next < held.count }
        var isUnused: Bool { running == 0 && !hasHeld }

        mutating func takeHeld() -> Held? {
            guard hasHeld else { return nil }
            let taken = held[next]
            next += 1
            if next == held.count {
                held.removeAll(keepingCapacity: held.count <= 64)
                next = 0
            }
            return taken
        }
    }

    /// Per host with a transfer in libcurl or held back, while `countsHosts`.
    private var hosts: [String: HostQueue] = [:]
    /// Whether `hosts` counts the transfers in libcurl; while it does, every
    /// transfer in libcurl is counted there.
    private var countsHosts = false
    /// Hosts where a transfer ended while others were held back.
    private var hostsWithRoom: [String] = []
    /// Requests held back.
    private(set) var heldCount = 0
    /// No held request's deadline is before this (CLOCK_MONOTONIC ns).
    private var nextHeldDeadline = Int64.max
    /// Held requests found past their deadline, handed out one per ``nextAction(limit:now:)``.
    private var expired: [Request] = []

    /// Whether ``nextAction(limit:now:)`` may have something to do: a request
    /// is held back, or a host got room. When not, the owner need not read the clock.
    var needsAttention: Bool {
        heldCount > 0 || !hostsWithRoom.isEmpty || !expired.isEmpty
    }

    /// A request arrives at `now`, with `inLibcurl` the transfers libcurl has.
    /// On `.start` the owner starts it and reports ``started(_:)``.
    mutating func admit(
        _ request: Request, timeoutMilliseconds: Int, inLibcurl: [Request], limit: Int, now: Int64
    ) -> Admission {
        if !countsHosts {
            // Nothing is held back while not counting.
            guard inLibcurl.count >= limit else { return .start }
            countsHosts = true
            for running in inLibcurl {
                hosts[running.hostKey, default: HostQueue()].running += 1
            }
        }
        let key = request.hostKey
        guard let queue = hosts[key], queue.running >= limit || queue.hasHeld else { return .start }
        // Its timeout counts from now, as it would in libcurl.
        let deadline = now + Int64(timeoutMilliseconds) * 1_000_000
        hosts[key, default: HostQueue()].held.append(Held(request: request, deadline: deadline))
        heldCount += 1
        nextHeldDeadline = Swift.min(nextHeldDeadline, deadline)
        return .held
    }

    /// The owner put `request` into libcurl.
    mutating func started(_ request: Request) {
        if countsHosts {
            hosts[request.hostKey, default: HostQueue()].running += 1
        }
    }

    /// `request`, which ``started(_:)``, left libcurl.
    mutating func ended(_ request: Request, limit: Int) {
        guard countsHosts else { return }
        defer {
            if hosts.isEmpty { countsHosts = false }
        }
        // One hash of the key, not two or three: found once, then changed or removed in place.
        let key = request.hostKey
        guard let index = hosts.index(forKey: key) else { return }
        let queue = hosts.values[index]
        if queue.running <= 1 && !queue.hasHeld {
            hosts.remove(at: index)
        } else {
            hosts.values[index].running -= 1
            // A limit lowered below `running` is reached one ending at a
            // time, so this catches it too.
            if queue.hasHeld && queue.running == limit {
                hostsWithRoom.append(key)
            }
        }
    }

    /// The Task of `request` was cancelled: when it is held back, it is
    /// dropped and `true` returned (its caller has been resumed already).
    mutating func cancelled(_ request: Request) -> Bool {
        guard heldCount > 0, let index = hosts.index(forKey: request.hostKey) else { return false }
        let queue = hosts.values[index]
        guard let position = queue.held[queue.next...].firstIndex(where: { $0.request === request }) else { return false }
        hosts.values[index].held.remove(at: position)
        heldCount -= 1
        if heldCount == 0 { nextHeldDeadline = .max }
        if hosts.values[index].isUnused {
            hosts.remove(at: index)
        }
        return true
    }

    /// What to do next at `now`: start a held request whose host has room
    /// (oldest first), or fail one whose deadline has passed, whether or not
    /// its host has room. `nil` when there is nothing to do until a transfer
    /// ends or ``millisecondsToNextDeadline(now:)`` pass.
    mutating func nextAction(limit: Int, now: Int64) -> Action? {
        while let key = hostsWithRoom.last {
            if let index = hosts.index(forKey: key) {
                if hosts.values[index].running < limit, let held = hosts.values[index].takeHeld() {
                    heldCount -= 1
                    if heldCount == 0 { nextHeldDeadline = .max }
                    let remaining = (held.deadline - now) / 1_000_000
                    guard remaining >= 1 else { return .timeOut(held.request) }
                    return .start(held.request, timeoutMilliseconds: Int(remaining))
                }
                if hosts.values[index].isUnused {
                    hosts.remove(at: index)
                }
            }
            hostsWithRoom.removeLast()
        }
        if heldCount > 0 && now >= nextHeldDeadline {
            collectExpired(now: now)
        }
        return expired.popLast().map { .timeOut($0) }
    }

    /// Moves every held request whose deadline has passed to `expired`.
    private mutating func collectExpired(now: Int64) {
        var earliest = Int64.max
        for key in Array(hosts.keys) {
            guard var queue = hosts.removeValue(forKey: key) else { continue }
            if queue.hasHeld {
                var kept: [Held] = []
                for held in queue.held[queue.next...] {
                    if held.deadline <= now {
                        expired.append(held.request)
                    } else {
                        earliest = Swift.min(earliest, held.deadline)
                        kept.append(held)
                    }
                }
                heldCount -= queue.held.count - queue.next - kept.count
                queue.held = kept
                queue.next = 0
            }
            if !queue.isUnused {
                hosts[key] = queue
            }
        }
        nextHeldDeadline = earliest
    }

    /// How long the driver may wait in libcurl at `now` before a held
    /// request's deadline, in whole milliseconds rounded up: at least 1, at
    /// most `longest`.
    func millisecondsToNextDeadline(now: Int64, longest: Int32) -> Int32 {
        guard heldCount > 0, nextHeldDeadline != .max else { return longest }
        let milliseconds = (nextHeldDeadline - now + 999_999) / 1_000_000
        return Int32(Swift.min(Swift.max(milliseconds, 1), Int64(longest)))
    }

    /// Takes every held request out (the engine stops) and forgets every count.
    mutating func removeAll() -> [Request] {
        var held: [Request] = expired
        for queue in hosts.values {
            held += queue.held[queue.next...].map(\.request)
        }
        self = HostAdmission()
        return held
    }
}
