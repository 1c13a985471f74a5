#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The answer to a device authorization request (RFC 8628 §3.2): what to show
/// the user, and the device code to poll the token endpoint with.
///
/// Codable, so a CLI or server can keep it while it polls. It holds the
/// device code, a credential; `description` redacts it.
public struct DeviceAuthorization: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The device code, sent when polling the token endpoint.
    public let deviceCode: Secret
    /// The code the user types at the verification URI.
    public let userCode: String
    /// Where the user goes to enter the code.
    public let verificationURI: URL
    /// A URI that already carries the user code (for a QR code), when the provider sent one.
    public let verificationURIComplete: URL?
    /// When the device and user codes expire, computed from the time the request was sent.
    public let expiresAt: Date
    /// How long to wait between polls: the provider's `interval`, 5 seconds when absent.
    public let interval: Duration

    /// The default polling interval of RFC 8628 §3.2.
    static let defaultInterval: Duration = .seconds(5)
    /// The longest interval or lifetime honoured; longer ones are clamped.
    static let maxSeconds: Double = 86_400

    /// Creates a device authorization.
    public init(
        deviceCode: Secret,
        userCode: String,
        verificationURI: URL,
        verificationURIComplete: URL? = nil,
        expiresAt: Date,
        interval: Duration = .seconds(5)
    ) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresAt = expiresAt
        self.interval = interval
    }

    /// The user code, the verification URI and the expiry; never the device code.
    public var description: String {
        "DeviceAuthorization(user code \(userCode), \(verificationURI.absoluteString), expires \(expiresAt.timeIntervalSince1970), interval \(interval))"
    }

    /// Parses a device authorization endpoint's answer to a request sent at `requestedAt`.
    ///
    /// `verification_url` (Google's spelling) is accepted for
    /// `verification_uri`; `expires_in` and `interval` may be numbers or
    /// numeric strings; an interval under one second is raised to one, and
    /// values over a day are clamped to a day. The user code must be
    /// printable (it is shown on a terminal) and the URIs absolute `http(s)`.
    ///
    /// - Throws: as ``TokenResponseParser`` does for the status
    ///   (`response_too_large`, `unexpected_redirect`, `rate_limited`, the
    ///   provider's error, `http_error`); `invalid_token_response` when the
    ///   body is not a usable device authorization response (there is no
    ///   more specific code in the contract of DESIGN.md §7).
    static func parse(_ response: HTTPTransportResponse, requestedAt: Date, maxBodySize: Int = 1 << 20) throws(OAuth2Error)
        -> DeviceAuthorization
    {
        let endpoint = "device authorization endpoint"
        try ProviderResponse.requireSuccess(response, endpoint: endpoint, maxBodySize: maxBodySize, now: requestedAt)
        let object = try ProviderResponse.object(of: response, endpoint: endpoint)
        if let error = ProviderResponse.providerError(in: object, httpStatus: response.status.code) {
            throw error
        }
        func invalid(_ problem: String) -> OAuth2Error {
            OAuth2Error(code: .invalidTokenResponse, message: "the \(endpoint)'s answer \(problem)", httpStatus: response.status.code)
        }

        guard let deviceCode = object["device_code"]?.stringValue, ProviderResponse.isVisibleASCII(deviceCode) else {
            throw invalid("has no usable device_code")
        }
        guard let userCode = object["user_code"]?.stringValue, !userCode.isEmpty,
            !userCode.unicodeScalars.contains(where: {
                $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
            })
        else {
            throw invalid("has no printable user_code")
        }
        guard let verificationText = (object["verification_uri"] ?? object["verification_url"])?.stringValue,
            let verificationURI = httpURL(verificationText)
        else {
            throw invalid("has no absolute http(s) verification_uri")
        }
        var verificationURIComplete: URL?
        if let completeValue = object["verification_uri_complete"] ?? object["verification_url_complete"], completeValue != .null {
            guard let text = completeValue.stringValue, let url = httpURL(text) else {
                throw invalid("has a verification_uri_complete that is not an absolute http(s) URL")
            }
            verificationURIComplete = url
        }
        guard case .value(let expiresIn) = ProviderResponse.seconds(object["expires_in"]), expiresIn > 0 else {
            throw invalid("has no positive expires_in")
        }
        let interval: Duration
        switch ProviderResponse.seconds(object["interval"]) {
        case .absent:
            interval = defaultInterval
        case .value(let seconds):
            interval = .seconds(min(max(seconds, 1), maxSeconds))
        case .invalid:
            throw invalid("has an interval that is not a non-negative number")
        }
        return DeviceAuthorization(
            deviceCode: Secret(deviceCode),
            userCode: userCode,
            verificationURI: verificationURI,
            verificationURIComplete: verificationURIComplete,
            expiresAt: requestedAt.addingTimeInterval(min(expiresIn, maxSeconds)),
            interval: interval
        )
    }

    /// The URL when the text is an absolute `http` or `https` URL with a host.
    private static func httpURL(_ text: String) -> URL? {
        guard let parts = URLParts(text[...]), parts.isHTTP, !(parts.host ?? "").isEmpty else { return nil }
        return URL(string: text)
    }
}

extension DeviceAuthorization: CustomReflectable {
    /// What `dump` and debuggers show: everything but the device code.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "userCode": userCode,
                "verificationURI": verificationURI,
                "verificationURIComplete": verificationURIComplete as Any,
                "expiresAt": expiresAt,
                "interval": interval,
            ], displayStyle: .struct)
    }
}
