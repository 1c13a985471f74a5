import Foundation
import OAuth2

extension EnvironmentReader {
    /// Sign in with Apple from `SIGNIN_APPLE_CLIENT_ID` (the Services ID),
    /// `SIGNIN_APPLE_TEAM_ID`, `SIGNIN_APPLE_KEY_ID` and `SIGNIN_APPLE_KEY_FILE`
    /// (the `.p8` key, held to the token store's file checks);
    /// `SIGNIN_APPLE_SERVER` points it elsewhere than Apple, for tests.
    /// `nil` when the client id is not set.
    mutating func apple() -> OAuth2Configuration? {
        guard let clientID = optional("SIGNIN_APPLE_CLIENT_ID") else { return nil }
        let teamID = required("SIGNIN_APPLE_TEAM_ID")
        let keyID = required("SIGNIN_APPLE_KEY_ID")
        let keyFile = required("SIGNIN_APPLE_KEY_FILE")
        let server = url("SIGNIN_APPLE_SERVER", required: false) ?? OAuth2Configuration.signInWithAppleServer
        guard let teamID, let keyID, let keyFile else { return nil }
        do throws(OAuth2Error) {
            let pem = try PrivateKeyFile.read(keyFile)
            return try OAuth2Configuration.signInWithApple(
                clientID: clientID, teamID: teamID, keyID: keyID, privateKeyPEM: pem.value, server: server)
        } catch {
            invalid("SIGNIN_APPLE_KEY_FILE", "\(error.code): \(error.message)")
            return nil
        }
    }
}
