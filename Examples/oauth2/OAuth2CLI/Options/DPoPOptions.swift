import ArgumentParser
import OAuth2

/// `--dpop` and `--dpop-algorithm`: the options of a command that starts a
/// grant (`authorize`, `device`, `client-credentials`, `password`).
///
/// Only a grant command takes them: the key belongs to the grant, is stored
/// with its tokens, and every later command (`call`, `refresh`, `token`,
/// `userinfo`, `revoke`, `git-credential`) follows the stored token's
/// binding with no flag.
struct DPoPOptions: ParsableArguments {
    @Flag(
        help: ArgumentHelp(
            "Bind this grant's tokens to a new DPoP key, RFC 9449: a stolen token is useless without the key.",
            discussion: "The key is stored with the token; later commands present it with proofs, no flag needed."
        )
    )
    var dpop = false

    @Option(
        name: .customLong("dpop-algorithm"),
        help: ArgumentHelp(
            "The new DPoP key's algorithm: \(DPoPAlgorithm.namesInWords); implies --dpop (default ES256, or the first the provider allows).",
            valueName: "alg"
        )
    )
    var algorithm: DPoPAlgorithm?

    /// The configuration's DPoP settings: `nil` (bearer tokens) unless
    /// `--dpop` or `--dpop-algorithm` is given.
    var settings: DPoPSettings? {
        guard dpop || algorithm != nil else { return nil }
        return DPoPSettings(algorithm: algorithm?.algorithm)
    }
}

/// A value of `--dpop-algorithm`: one of the algorithms a DPoP key can be
/// made for, refused by the parser otherwise.
struct DPoPAlgorithm: ExpressibleByArgument, Sendable {
    let algorithm: JWSAlgorithm

    init?(argument: String) {
        let lowered = argument.lowercased()
        guard let match = DPoPKey.supportedAlgorithms.first(where: { $0.rawValue.lowercased() == lowered }) else { return nil }
        algorithm = match
    }

    static var allValueStrings: [String] { DPoPKey.supportedAlgorithms.map(\.rawValue) }

    static var defaultCompletionKind: CompletionKind { .list(allValueStrings) }

    /// "ES256, EdDSA, PS256 or RS256".
    static var namesInWords: String {
        let names = allValueStrings
        return names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
    }
}
