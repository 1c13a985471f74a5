#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The messages of dynamic client registration: the JSON a registration or
/// an update sends (RFC 7591 §3.1, RFC 7592 §2.2) and the answer a
/// registration, read or update gets back (RFC 7591 §3.2.1).
///
/// No error made here quotes the body or a value from it: the answer holds a
/// client secret and a registration access token.
enum RegistrationMessage {
    /// `client` as a JSON object (RFC 7591 names, `nil` fields left out),
    /// with `client_id` and `client_secret` when given (an update sends them back).
    static func body(for client: ClientMetadata, clientID: String?, clientSecret: Secret?) throws(OAuth2Error) -> Data {
        var object = try object(of: client)
        if let clientID {
            object["client_id"] = .string(clientID)
        }
        if let clientSecret {
            object["client_secret"] = .string(clientSecret.value)
        }
        return try encode(object)
    }

    /// `client`'s fields as a JSON object.
    static func object(of client: ClientMetadata) throws(OAuth2Error) -> [String: JSONValue] {
        do {
            let data = try JSONEncoder().encode(client)
            guard case .object(let object) = try JSONParser.parse(data) else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the client metadata does not encode as a JSON object")
            }
            return object
        } catch let error as OAuth2Error {
            throw error
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "the client metadata cannot be encoded as JSON")
        }
    }

    /// A JSON object's bytes, keys sorted, slashes left as they are.
    static func encode(_ object: [String: JSONValue]) throws(OAuth2Error) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(object)
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "the client metadata cannot be encoded as JSON")
        }
    }

    /// An answer of the registration or client configuration endpoint.
    struct Answer {
        var response: HTTPTransportResponse
        /// The issuer of the server asked, which the registration is bound to.
        var issuer: String
        /// A URL whose origin `registration_client_uri` must have: the endpoint that answered.
        var managementOrigin: URL
        /// The metadata sent (or, for a read, registered before): the fields the answer leaves out.
        var sent: ClientMetadata
        /// The registration read or updated; its secret and tokens stand when the answer has none.
        var previous: ClientRegistration?
        var maxBodySize: Int

        /// The registration the answer describes (RFC 7591 §3.2.1).
        ///
        /// - Parameter successes: the statuses that carry a registration (201
        ///   for a new one, where 200 is accepted too; 200 for a read or an update).
        func registration(successes: Set<Int>) throws(OAuth2Error) -> ClientRegistration {
            let endpoint = previous == nil ? "registration endpoint" : "client configuration endpoint"
            try ProviderResponse.requireSuccess(response, endpoint: endpoint, maxBodySize: maxBodySize, now: Date())
            let status = response.status.code
            func invalid(_ problem: String) -> OAuth2Error {
                OAuth2Error(code: .invalidRegistrationResponse, message: "the \(endpoint)'s answer \(problem)", httpStatus: status)
            }
            guard successes.contains(status) else {
                throw invalid("has HTTP status \(status), not \(successes.sorted().map(String.init).joined(separator: " or "))")
            }
            guard ProviderResponse.bodyFormat(of: response) == .json else {
                throw invalid("is not JSON")
            }
            let object: [String: JSONValue]
            do throws(OAuth2Error) {
                object = try ProviderResponse.object(of: response, endpoint: endpoint)
            } catch {
                throw invalid("is not a JSON object")
            }
            if let error = ProviderResponse.providerError(in: object, httpStatus: status) {
                throw error
            }

            guard let clientID = try string("client_id", in: object, invalid), !clientID.isEmpty else {
                throw invalid("has no client_id")
            }
            guard ProviderResponse.isVisibleASCII(clientID) else {
                throw invalid("has a client_id with characters outside printable ASCII")
            }
            if let previous, previous.clientID != clientID {
                throw invalid("is about another client than the one asked for")
            }

            var registration = ClientRegistration(
                issuer: issuer,
                clientID: clientID,
                clientSecret: previous?.clientSecret,
                clientSecretExpiresAt: previous?.clientSecretExpiresAt,
                clientIDIssuedAt: previous?.clientIDIssuedAt,
                registrationAccessToken: previous?.registrationAccessToken,
                registrationClientURI: previous?.registrationClientURI,
                metadata: try ClientMetadata(echoed: object, over: sent, invalid)
            )
            if let secret = try string("client_secret", in: object, invalid) {
                guard ProviderResponse.isVisibleASCII(secret) else {
                    throw invalid("has a client_secret that is empty or has characters outside printable ASCII")
                }
                registration.clientSecret = .opaque(secret)
                // A new secret's lifetime is the answer's; an absent one (RFC 7591 §3.2.1 requires it) does not carry the old one's.
                registration.clientSecretExpiresAt = nil
            }
            if object["client_secret_expires_at"] != nil {
                // 0 is RFC 7591 §3.2.1's "does not expire".
                registration.clientSecretExpiresAt = try date("client_secret_expires_at", in: object, invalid)
            }
            if object["client_id_issued_at"] != nil {
                registration.clientIDIssuedAt = try date("client_id_issued_at", in: object, invalid)
            }
            if let token = try string("registration_access_token", in: object, invalid) {
                guard ProviderResponse.isVisibleASCII(token), !token.contains(" ") else {
                    throw invalid("has a registration_access_token that is empty or has characters a header cannot carry")
                }
                registration.registrationAccessToken = Secret(token)
            }
            if let text = try string("registration_client_uri", in: object, invalid) {
                registration.registrationClientURI = try managementURI(text, invalid)
            }
            return registration
        }

        /// `registration_client_uri`, which must be `https` (loopback `http`) on
        /// the origin of the endpoint that answered.
        ///
        /// The registration access token goes there, and the client sends
        /// `GET`, `PUT` and `DELETE` to it: a URI on another origin would have
        /// the client carry that token, and its secret, to any host the
        /// answer names, an internal one included (RFC 7592 §3 has the
        /// configuration endpoint on the server's side; every server puts it
        /// under its registration endpoint).
        private func managementURI(_ text: String, _ invalid: (String) -> OAuth2Error) throws(OAuth2Error) -> URL {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
                url.host != nil, url.fragment == nil, url.user == nil, url.password == nil
            else {
                throw invalid("has a registration_client_uri that is not an absolute http or https URL")
            }
            guard EndpointPolicy.isSecure(url) else {
                throw invalid("has a registration_client_uri that is not https (http is allowed for loopback hosts only)")
            }
            guard Origin(url) == Origin(managementOrigin) else {
                throw invalid(
                    "has a registration_client_uri on another origin than the endpoint that answered; refusing to send the registration access token there"
                )
            }
            return url
        }
    }

    /// A string field: `nil` when absent or `null`, `invalid_registration_response` when not a string.
    static func string(_ name: String, in object: [String: JSONValue], _ invalid: (String) -> OAuth2Error) throws(OAuth2Error) -> String? {
        switch object[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw invalid("has a \(name) that is not a string")
        }
    }

    /// A time in seconds since 1970 (RFC 7591 §3.2.1); 0 and absence are `nil`.
    static func date(_ name: String, in object: [String: JSONValue], _ invalid: (String) -> OAuth2Error) throws(OAuth2Error) -> Date? {
        switch ProviderResponse.seconds(object[name]) {
        case .absent: return nil
        case .value(let seconds): return seconds == 0 ? nil : Date(timeIntervalSince1970: seconds)
        case .invalid: throw invalid("has a \(name) that is not a non-negative number of seconds")
        }
    }
}

extension ClientMetadata {
    /// The metadata a server echoed in `object`, each field it left out taken from `sent`.
    ///
    /// - Throws: `invalid` for a field of the wrong type.
    init(echoed object: [String: JSONValue], over sent: ClientMetadata, _ invalid: (String) -> OAuth2Error) throws(OAuth2Error) {
        typealias Message = RegistrationMessage
        func strings(_ name: String) throws(OAuth2Error) -> [String]? {
            try ProviderResponse.strings(name, in: object, invalid)
        }
        func url(_ name: String) throws(OAuth2Error) -> URL? {
            guard let text = try Message.string(name, in: object, invalid) else { return nil }
            guard let url = URL(string: text), url.scheme != nil else { throw invalid("has a \(name) that is not an absolute URL") }
            return url
        }
        self = sent
        if let uris = try strings("redirect_uris") {
            var urls: [URL] = []
            for text in uris {
                guard let url = URL(string: text), url.scheme != nil else {
                    throw invalid("has a redirect_uris entry that is not an absolute URL")
                }
                urls.append(url)
            }
            redirectURIs = urls
        }
        if let name = try Message.string("client_name", in: object, invalid) { clientName = name }
        if let grants = try strings("grant_types") { grantTypes = grants }
        if let types = try strings("response_types") { responseTypes = types }
        if let method = try Message.string("token_endpoint_auth_method", in: object, invalid) { tokenEndpointAuthMethod = method }
        if let scope = try Message.string("scope", in: object, invalid) { self.scope = scope }
        if let uri = try url("client_uri") { clientURI = uri }
        if let uri = try url("logo_uri") { logoURI = uri }
        if let id = try Message.string("software_id", in: object, invalid) { softwareID = id }
        if let version = try Message.string("software_version", in: object, invalid) { softwareVersion = version }
        if let contacts = try strings("contacts") { self.contacts = contacts }
        if let bound = try ProviderResponse.flag("dpop_bound_access_tokens", in: object, invalid) { dpopBoundAccessTokens = bound }
    }
}
