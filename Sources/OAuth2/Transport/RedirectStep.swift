#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// What following one redirect (RFC 9110 §15.4) makes of a request: the
/// same rules for a plain ``CurlTransport`` asked to ``RedirectPolicy/follow``
/// and for ``SigningTransport``, which follows by hand so its token stays on
/// its origin.
///
/// - Only `http` and `https` locations are followed, and never from `https`
///   to `http`, on any hop.
/// - 303 turns any method but HEAD into a GET without a body, and 301 and
///   302 turn a POST into one; 307 and 308 keep the method and the body.
/// - The request's header fields go only to its own origin (scheme, host
///   and port). A hop to another origin carries only the fields that can
///   carry no credential (``fieldsForAnotherOrigin``): no `Authorization`,
///   `Proxy-Authorization` or `Cookie`, and none of the caller's own fields
///   (`X-Api-Key` and the like), whose meaning the transport cannot know.
///   Back on the request's origin, they are all sent again, but for a
///   `DPoP` proof, which was made for one method and URL and goes to no other.
/// - A body never goes to another origin: a redirect that would take it
///   there (a 307 or 308, or a 301 or 302 of anything but a POST) is not
///   followed, and the 3xx is the response.
struct RedirectStep {
    /// What to do after a response.
    enum Outcome {
        /// Not a redirect to follow: the response is the answer.
        case stop
        /// Send this request next; `sameOrigin`: to the first request's origin.
        case follow(HTTPTransportRequest, sameOrigin: Bool)
        /// The redirect must not be followed: why, without the location's query.
        case refuse(String)
    }

    /// The fields a hop to another origin keeps: they say what the client
    /// accepts and who it is, and none can carry a credential.
    static let fieldsForAnotherOrigin: [HTTPField.Name] = [.accept, .acceptLanguage, .acceptEncoding, .userAgent, .cacheControl]

    /// The fields that describe a body, dropped with it.
    private static let bodyFields: [HTTPField.Name] = [.contentType, .contentLength, .contentEncoding, .contentLanguage]

    /// The statuses that are followed.
    static func isRedirect(_ status: Int) -> Bool {
        switch status {
        case 301, 302, 303, 307, 308: true
        default: false
        }
    }

    /// What follows `response`, the answer to `current`, a hop of `original`.
    ///
    /// `original` is the request as its sender made it: every hop's fields
    /// are taken from it, so a hop back to its origin gets them all again.
    static func next(
        after response: borrowing HTTPTransportResponse,
        of current: HTTPTransportRequest,
        original: HTTPTransportRequest
    ) -> Outcome {
        guard isRedirect(response.status.code), let location = response.headers[.location] else { return .stop }
        guard let next = URL(string: location, relativeTo: current.url)?.absoluteURL,
            let scheme = next.scheme?.lowercased(), scheme == "https" || scheme == "http", next.host?.isEmpty == false
        else {
            return .refuse("redirected to an unusable location")
        }
        if current.url.scheme?.lowercased() == "https" && scheme == "http" {
            return .refuse("redirected from https to http: \(next.redactingQuery)")
        }
        var request = current
        request.url = next
        let status = response.status.code
        let becomesGet = (status == 303 && current.method != .head) || ((status == 301 || status == 302) && current.method == .post)
        if becomesGet {
            request.method = .get
            request.body = nil
        }
        let sameOrigin = Origin(next) == Origin(original.url)
        if sameOrigin {
            request.headers = original.headers
        } else {
            guard request.body == nil else { return .stop }
            request.headers = HTTPFields(original.headers.filter { fieldsForAnotherOrigin.contains($0.name) })
        }
        // A DPoP proof names one method and URL (RFC 9449 §4.2): it never goes
        // to another, even on the same origin; a signer makes the hop its own.
        if request.headers.contains(DPoPFields.proof) {
            request.headers[DPoPFields.proof] = nil
        }
        if request.body == nil {
            for name in bodyFields where request.headers.contains(name) {
                request.headers[name] = nil
            }
        }
        return .follow(request, sameOrigin: sameOrigin)
    }
}
