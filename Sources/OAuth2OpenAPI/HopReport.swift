import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which URL answered a request of ``OAuth2Middleware``, told by a
/// ``HTTPTransportClientTransport`` at the end of the chain.
///
/// A generated client's response does not say which URL answered it. A
/// transport that follows redirects on its own (AsyncHTTPClient's and
/// URLSession's do by default) may hand back the answer of another origin,
/// which never saw the token, and its 401 must not cost the token. The
/// middleware puts a report in a task-local for the chain it calls; a
/// ``HTTPTransportClientTransport`` fills it in, and the middleware knows the hop.
final class HopReport: Sendable {
    /// The report of the middleware's request now being sent, if any.
    @TaskLocal static var current: HopReport?

    private let answered = LockedValue<URL?>(nil)

    /// The client certificate the signed request presents (mutual TLS, RFC
    /// 8705), for the ``HTTPTransportClientTransport`` that sends it: a
    /// request of the generated client has no field for it. A transport of
    /// another kind at the end of the chain presents none.
    let clientCertificate: ClientCertificate?

    init(clientCertificate: ClientCertificate? = nil) {
        self.clientCertificate = clientCertificate
    }

    /// The URL that answered, when a transport said.
    var url: URL? { answered.withLock { $0 } }

    /// Records the URL that answered.
    func record(_ url: URL) {
        answered.withLock { $0 = url }
    }
}
