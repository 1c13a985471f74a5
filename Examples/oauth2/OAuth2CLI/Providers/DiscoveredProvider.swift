import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The providers the CLI saves by itself: what `oauth2 call` learned about an
/// authorization server (RFC 9728, RFC 8414) and how it identified itself
/// there, and what `oauth2 register` registered, under a name made from the
/// server's issuer, so that `oauth2 provider show` lists it and
/// `--provider NAME` uses it.
enum DiscoveredProvider {
    /// The provider name for `issuer`: its host in lower case, then `-PORT`
    /// when it has a port, then `-SEGMENT` for each non-empty path segment;
    /// every character other than a letter, digit, `.`, `_` or `-` becomes
    /// `-`, leading `.`, `_`, `-` are dropped, and the name is cut at 64
    /// characters. `https://auth.example.com` is `auth.example.com`;
    /// `http://127.0.0.1:8000/o` is `127.0.0.1-8000-o`.
    static func name(forIssuer issuer: String) -> String {
        guard let url = URL(string: issuer), let host = url.host, !host.isEmpty else { return safe(issuer) }
        var name = host.lowercased()
        if let port = url.port { name += "-\(port)" }
        for segment in url.path.split(separator: "/") where !segment.isEmpty {
            name += "-" + segment
        }
        return safe(name)
    }

    /// `text` with every character a provider name may not have replaced.
    private static func safe(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let plain =
                scalar.isASCII
                && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "."
                    || scalar == "_" || scalar == "-")
            scalars.append(plain ? scalar : "-")
        }
        let name = String(String(scalars).drop { $0 == "." || $0 == "_" || $0 == "-" }.prefix(64))
        return name.isEmpty ? "provider" : name
    }

    /// The name under which `issuer`'s provider is (or will be) saved: the
    /// one already saved for it, else ``name(forIssuer:)``, with `-2`, `-3`, …
    /// when a provider saved by hand (or for another issuer) has that name.
    static func savedName(forIssuer issuer: String, in file: ProviderFile) -> String {
        if let (name, _) = file.providers.first(where: { $0.value.issuer == issuer && isDiscovered($0.value) }) {
            return name
        }
        let base = name(forIssuer: issuer)
        var candidate = base
        var suffix = 2
        while let taken = file.providers[candidate], taken.issuer != issuer || !isDiscovered(taken) {
            candidate = String(base.prefix(60)) + "-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    /// Whether `record` was saved by `oauth2 call` or `oauth2 register` rather than by hand.
    static func isDiscovered(_ record: ProviderRecord) -> Bool {
        record.resources != nil || record.registration != nil || record.clientMetadataURL != nil
    }

    /// Saves (or completes) the provider of `server`: its endpoints, the
    /// client id it knows the CLI by and how that was obtained, and
    /// `resource` among the resources behind it. Never a secret.
    ///
    /// - Returns: the provider's name.
    @discardableResult
    static func remember(
        server: AuthorizationServerMetadata,
        resource: String?,
        clientID: String?,
        clientMetadataURL: URL?,
        registration: ClientRegistration?,
        redirectURI: URL,
        scopes: [String]
    ) throws -> String {
        var file = try ProviderFile.load()
        let name = savedName(forIssuer: server.issuer, in: file)
        var record = file.providers[name] ?? ProviderRecord()
        record.issuer = server.issuer
        record.authorizeURL = server.authorizationEndpoint?.absoluteString
        record.tokenURL = server.tokenEndpoint?.absoluteString ?? record.tokenURL
        record.revokeURL = server.revocationEndpoint?.absoluteString ?? record.revokeURL
        record.deviceURL = server.deviceAuthorizationEndpoint?.absoluteString ?? record.deviceURL
        record.redirectURI = redirectURI.absoluteString
        if let clientID { record.clientID = clientID }
        if !scopes.isEmpty { record.scope = scopes.joined(separator: " ") }
        if let clientMetadataURL, clientID == clientMetadataURL.absoluteString {
            record.clientMetadataURL = clientMetadataURL.absoluteString
            record.registration = nil
        } else if let registration, registration.clientID == clientID {
            record.registration = RegistrationSummary(registration)
            record.clientMetadataURL = nil
            record.authMethod = AuthMethod(name: registration.metadata.tokenEndpointAuthMethod)?.name
        }
        var resources = record.resources ?? []
        if let resource, !resources.contains(resource) { resources.append(resource) }
        record.resources = resources
        file.providers[name] = record
        try file.save()
        return name
    }
}
