import OAuth2
import OAuth2Loopback

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The browser trip of `oauth2 call` when it signs in by itself, the way
/// `oauth2 authorize` makes it: the authorize URL as a line of stdout, and the
/// redirect pasted on stdin. A step-up prints its URL and reads its redirect
/// the same way, so a script reads one URL line per browser trip.
struct PastedRedirectHandler: AuthorizationRedirectHandler {
    let redirectURI: URL

    func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
        let pasted = try Self.paste(after: pending.url, redirectURI: redirectURI)
        let trimmed = String(pasted.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        guard let url = URL(string: trimmed), url.scheme != nil else {
            throw OAuth2Error(code: .invalidRedirectURL, message: "the pasted text is not a URL")
        }
        StandardError.line("Exchanging the code for a token…")
        return url
    }

    /// Prints `url` as a line of stdout and how to get the redirect on
    /// stderr, and reads what the user pastes (a line of at most 64 KiB).
    /// `formPost` adds the hint for a provider that posts its answer.
    static func paste(after url: URL, redirectURI: URL, formPost: Bool = false) throws(OAuth2Error) -> String {
        StandardOutput.line(url.absoluteString)
        StandardError.line("Open the URL above in a browser and sign in. The browser is then sent to \(redirectURI.absoluteString)?…")
        StandardError.line("(the page may fail to load: that is expected). Copy that whole address from the address bar.")
        if formPost {
            StandardError.line(
                "A provider that posts its answer there (response_mode=form_post) leaves no URL: paste the posted form body instead.")
        }
        StandardError.write("Paste the redirect URL: ")
        guard let pasted = StandardInput.readLine(limit: 64 * 1024) else {
            throw OAuth2Error(code: .invalidRedirectURL, message: "no redirect URL was pasted (end of input)")
        }
        if StandardInput.isTerminal {
            StandardError.lineEndedByTerminal()
        } else {
            StandardError.endLine()
        }
        return pasted
    }
}

/// `--listen`: the redirect received on a loopback listener (RFC 8252 §7.3).
///
/// The port is bound once, when the handler is made, so that the redirect URI
/// a registration carries and every authorization of the run (a step-up's
/// too) name the same one; a receiver serves one wait, so each later trip
/// binds that port again.
final class ListenerRedirectHandler: AuthorizationRedirectHandler {
    let redirectURI: URL
    private let timeout: Duration
    /// The receiver bound at creation, for the first trip.
    private let first: LockedValue<LoopbackReceiver?>

    /// Binds `redirectURI` (a free port when it names none).
    ///
    /// - Throws: ``UsageError`` for a redirect URI that is not loopback http.
    init(redirectURI: URL, timeout: Duration) throws {
        // Through Result: a do/catch around this typed-throwing initializer
        // crashes Swift 6.3.1 (signal 11 in MandatoryAllocBoxToStack).
        let receiver = Result { () throws(OAuth2Error) -> LoopbackReceiver in
            try LoopbackReceiver(redirectURI: redirectURI, applicationName: "oauth2")
        }
        switch receiver {
        case .success(let receiver):
            self.redirectURI = receiver.redirectURI
            self.first = LockedValue(receiver)
        case .failure(let error) where error.code == .invalidConfiguration:
            throw UsageError(
                "--listen needs an http redirect URI on 127.0.0.1 (or [::1], localhost), such as \(Settings.defaultRedirectURI); \(error.message)"
            )
        case .failure(let error):
            throw error
        }
        self.timeout = timeout
    }

    func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
        let prepared = first.withLock { receiver in
            defer { receiver = nil }
            return receiver
        }
        let receiver: LoopbackReceiver
        if let prepared {
            receiver = prepared
        } else {
            receiver = try LoopbackReceiver(redirectURI: redirectURI, applicationName: "oauth2")
        }
        StandardOutput.line(pending.url.absoluteString)
        StandardError.line("Open the URL above in a browser and sign in.")
        StandardError.line(
            "Waiting for the browser to come back to \(redirectURI.absoluteString) (up to \(timeout.components.seconds) s; Ctrl-C to give up)…"
        )
        let redirect: URL
        do {
            redirect = try await receiver.redirect(for: pending, timeout: timeout)
        } catch  where error.code == .timeout {
            throw OAuth2Error(
                code: .timeout,
                message: error.message + "; run the command again and finish signing in sooner (or raise --listen-timeout)"
            )
        }
        StandardError.line("The browser came back. Exchanging the code for a token…")
        return redirect
    }
}
