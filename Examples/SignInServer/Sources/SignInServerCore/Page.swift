import OAuth2

/// The app's few HTML pages. None ever shows a token.
enum Page {
    /// The home page of a signed-in user.
    static func signedIn(as username: String) -> String {
        document(
            title: "Signed in",
            body: """
                <p>Signed in as <strong id="username">\(HTML.escape(username))</strong>.</p>
                <p><a href="/me">What the provider says about you</a></p>
                <form method="post" action="/logout"><button type="submit">Sign out</button></form>
                """)
    }

    /// The home page of a visitor who is not signed in.
    static func signedOut() -> String {
        document(
            title: "Not signed in",
            body: """
                <p id="signed-out">You are not signed in.</p>
                <p><a href="/login">Sign in with the provider</a></p>
                """)
    }

    /// A failed sign-in or API call: the framework's stable error code, never a secret.
    static func error(_ what: String, code: OAuth2Error.Code) -> String {
        document(
            title: "Sign-in problem",
            body: """
                <p>\(HTML.escape(what))</p>
                <p>Error code: <code id="error-code">\(HTML.escape(code.rawValue))</code></p>
                <p><a href="/">Home</a></p>
                """)
    }

    /// A failure that is the app's or the provider's, not the visitor's.
    static func failure(_ what: String) -> String {
        document(
            title: "Something went wrong",
            body: """
                <p>\(HTML.escape(what))</p>
                <p><a href="/">Home</a></p>
                """)
    }

    private static func document(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head><meta charset="utf-8"><title>\(HTML.escape(title))</title></head>
        <body>
        <h1>\(HTML.escape(title))</h1>
        \(body)
        </body>
        </html>

        """
    }
}
