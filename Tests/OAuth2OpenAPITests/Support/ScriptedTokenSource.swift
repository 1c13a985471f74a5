import OAuth2

/// A ``TokenSource`` that hands out `tokens` in order: the first from
/// `token()`, the next one each time a token is rejected, and an error
/// when none is left. It counts what it was asked.
final class ScriptedTokenSource: TokenSource {
    private struct State {
        var tokens: [String]
        var replacements = 0
        var requests = 0
        var rejectedAfterRefresh: [OAuth2Error.Code] = []
    }

    private let state: LockedValue<State>

    init(_ tokens: String...) {
        state = LockedValue(State(tokens: tokens))
    }

    /// How many times a token was asked for.
    var requests: Int { state.withLock { $0.requests } }
    /// How many times a rejected token was replaced.
    var replacements: Int { state.withLock { $0.replacements } }
    /// The errors ``tokenRejectedAfterRefresh(_:error:)`` was told of.
    var rejectedAfterRefresh: [OAuth2Error.Code] { state.withLock { $0.rejectedAfterRefresh } }

    func token() async throws -> AccessToken {
        let first: String? = state.withLock { state in
            state.requests += 1
            return state.tokens.first
        }
        guard let first else { throw OAuth2Error(code: .notAuthenticated, message: "no token scripted") }
        return AccessToken(accessToken: Secret(first))
    }

    func token(replacing rejected: AccessToken) async throws -> AccessToken {
        let next: String? = state.withLock { state in
            state.replacements += 1
            if !state.tokens.isEmpty { state.tokens.removeFirst() }
            return state.tokens.first
        }
        guard let next else { throw OAuth2Error(code: .reauthorizationRequired, message: "no token left to script") }
        return AccessToken(accessToken: Secret(next))
    }

    func tokenRejectedAfterRefresh(_ token: AccessToken, error: OAuth2Error) async {
        state.withLock { $0.rejectedAfterRefresh.append(error.code) }
    }
}
