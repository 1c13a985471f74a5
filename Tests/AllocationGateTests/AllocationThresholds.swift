/// The most heap allocations each hot path may make per operation, in the
/// debug build `make test` runs (Tests/AllocationGateChild counts them).
///
/// A change that makes a path allocate more fails `AllocationGateTests`.
/// If the extra work is meant, raise the number here in the same commit and
/// say why in its message; when a change saves allocations, lower it, so the
/// gain is kept. Counts are per operation in the least of 5 batches of 200
/// after a warm-up, rounded to the nearest whole allocation: nothing here
/// waits on a clock or a socket, and what varies with thread timing (a
/// refresh's single flight sometimes suspends) stays well under half an
/// allocation per operation.
///
/// What counts: every malloc of the process, and every async call's frame
/// as one of them (the child runs without the task slab allocator, see
/// `Gate.environment`), so an async call more on a path is an allocation
/// more, whatever the sizes of the frames. Each count includes 2 of the
/// gate's own: the frames of the measured closure the batch loop calls.
/// Measured on Debian 12, Swift 6.3.1, debug build.
enum AllocationThresholds {
    static let perOperation: [String: Int] = [
        // OAuth2Client.send through a transport that answers at once: policy,
        // token decision, signing, span, the 401 analysis. One object; the
        // rest are the async frames of send, the transport call and the span.
        "signed-request": 20,
        // A typical token endpoint answer parsed into an AccessToken: the JSON
        // values, the fields' strings, the token's box. Synchronous: no frame
        // but the gate's.
        "token-parse": 18,
        // refreshAccessToken: the token request built, sent, parsed and stored,
        // under the account's lock, in the single flight's task. About 55
        // objects and buffers (the request's headers and form body, the
        // answer's JSON and token, the token's copies as its grant and
        // binding are set, the telemetry's counter and timer handles, the
        // logger's copy-on-write), two tasks of two allocations each (the
        // single flight's and the lock holder's), a dozen accessor frames
        // of the header and array iteration, and about 75 async frames: the
        // client, the coordinator, the vault and its lock, the store, the
        // DPoP-capable token request and its span. Once per token lifetime.
        // 152 since the coordinator's map became SingleFlight (shared with
        // ProtectedResourceClient's discovery and registration): measured 148
        // before that commit and 152 after, the added layer of generic async
        // calls between the coordinator and the refresh (not traced one by one).
        "refresh": 152,
        // CurlTransport's work on the caller's thread before libcurl sees a
        // signed GET: the URL's checks and the header list.
        "transfer-preparation": 23,
        // One DPoP proof (RFC 9449) for a GET presenting a token: claims and
        // header as JSON values, serialised, base64url, the jti's random
        // bytes, the ES256 signature (swift-crypto), the compact JWS. With
        // the hash seed fixed (AllocationGateTests sets it for the child).
        "dpop-proof": 653,
    ]
}
