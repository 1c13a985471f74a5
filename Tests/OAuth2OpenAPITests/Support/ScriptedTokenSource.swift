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
    /// The key every token is bound to (`token_type` DPoP), if any.
    private let dpopKey: DPoPKey?

    init(_ tokens: String...) {
        state = LockedValue(State(tokens: tokens))
        dpopKey = nil
    }

    /// Tokens bound to `key` (RFC 9449).
    init(bound key: DPoPKey, _ tokens: String...) {
        state = LockedValue(State(tokens: tokens))
        dpopKey = key
    }

    private func token(_ value: String) -> AccessToken {
        guard let dpopKey else { return AccessToken(accessToken: Secret(value)) }
        var token = AccessToken(accessToken: Secret(value), tokenType: "DPoP")
        token.dpopKey = dpopKey
        return token
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
        return token(first)
    }

    func token(replacing rejected: AccessToken) async throws -> AccessToken {
        let next: String? = state.withLock { state in
            state.replacements += 1
            if !state.tokens.isEmpty { state.tokens.removeFirst() }
            return state.tokens.first
        }
        guard let next else { throw OAuth2Error(code: .reauthorizationRequired, message: "no token left to script") }
        return token(next)
    }

    func tokenRejectedAfterRefresh(_ token: AccessToken, error: OAuth2Error) async {
        state.withLock { $0.rejectedAfterRefresh.append(error.code) }
    }
}
