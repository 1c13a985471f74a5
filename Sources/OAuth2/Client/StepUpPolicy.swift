#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decides, for one request of a ``ProtectedResourceClient``, whether a
/// refusal sends the user through an authorization (a first sign-in, or a
/// step-up for more scope, RFC 6750 §3.1, or a stronger authentication,
/// RFC 9470) or ends the request with a typed error carrying what the
/// resource asked for (``OAuth2Error/stepUp``).
///
/// A pure value (DESIGN.md §9): no I/O, no clock; the client feeds it what
/// happened and does what it answers. One per request, so that a resource
/// that asks again for what it was just given cannot send the user round in
/// circles: one sign-in, and one step-up for each distinct thing asked, at
/// most ``maxStepUps`` in all.
///
/// States: no authorization yet → signed in (after `.noToken`) → stepped up
/// (after a challenge, counted). Every state accepts every event; what was
/// authorized once is never authorized again for the same request.
struct StepUpPolicy: Sendable {
    /// What the request ran into.
    enum Event: Sendable, Equatable {
        /// No usable token for the resource: none stored, or its grant is gone.
        case noToken(initial: StepUpRequest)
        /// The resource refused the token for want of scope, or of a stronger
        /// authentication; `error` is the signing transport's, with its ``OAuth2Error/stepUp``.
        case challenged(OAuth2Error)
    }

    /// What the client does next.
    enum Action: Sendable, Equatable {
        /// Send the user through an authorization asking for this, then send the request again.
        case authorize(StepUpRequest)
        /// End the request with this error.
        case fail(OAuth2Error)
    }

    /// The most step-ups one request may make, whatever is asked.
    static let maxStepUps = 2

    private let mode: ProtectedResourceClient.StepUp
    private let canRedirect: Bool
    private var signedIn = false
    private var authorized: [StepUpRequest] = []

    /// - Parameters:
    ///   - mode: whether step-ups happen by themselves or are reported.
    ///   - canRedirect: whether the client has a redirect handler to send the user through.
    init(mode: ProtectedResourceClient.StepUp, canRedirect: Bool) {
        self.mode = mode
        self.canRedirect = canRedirect
    }

    /// The next action after `event`.
    mutating func event(_ event: Event) -> Action {
        switch event {
        case .noToken(let initial):
            guard canRedirect else {
                var error = OAuth2Error(
                    code: .authorizationRequired,
                    message:
                        "the resource needs a sign-in and the client has no redirect handler: send the user through authorizationURL(for:stepUp:)"
                )
                error.stepUp = initial
                return .fail(error)
            }
            guard !signedIn else {
                var error = OAuth2Error(
                    code: .authorizationRequired, message: "the resource refused the token of the sign-in just made; not signing in again")
                error.stepUp = initial
                return .fail(error)
            }
            signedIn = true
            return .authorize(initial)
        case .challenged(let error):
            guard let asked = error.stepUp else { return .fail(error) }
            guard mode == .automatic, canRedirect else { return .fail(error) }
            guard !authorized.contains(asked), authorized.count < Self.maxStepUps else {
                var again = error
                again.message += "; asked again after a step-up for it, so not authorizing again"
                return .fail(again)
            }
            authorized.append(asked)
            return .authorize(asked)
        }
    }
}
