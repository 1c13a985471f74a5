#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

package import CCurl

// libcurl's sockets, opened here (CURLOPT_OPENSOCKETFUNCTION) rather than by
// libcurl, for two reasons:
//
// - Close-on-exec. libcurl (7.88) opens them without it: every connection of
//   an app's client was inherited by every program the app started while it
//   was open, and a child that outlived the request kept the server's
//   connection open.
// - The address rule (HTTPTransportRequest.connectsOnlyToPublicAddresses):
//   this is the one place that sees the address libcurl is about to connect
//   to, after DNS and for each address it tries, so a name that resolves to
//   an internal address is caught whatever the name says.

/// Opens each socket libcurl connects with, close-on-exec; for a transfer
/// that may reach public addresses only (its unretained address is the
/// context), refuses an internal address: libcurl then tries the next one,
/// and fails with CURLE_COULDNT_CONNECT when none is left.
///
/// Runs on the thread that drives libcurl, inside `curl_multi_perform`.
let curlOpenSocketCallback: ccurl_opensocket_callback = { context, _, address in
    guard let address else { return CURL_SOCKET_BAD }
    let family = address.pointee.family
    if let context {
        let refused = Unmanaged<CurlTransfer>.fromOpaque(context)._withUnsafeGuaranteedRef { transfer in
            transfer.refuses(address)
        }
        if refused { return CURL_SOCKET_BAD }
    }
    #if canImport(Darwin)
    let fd = socket(family, address.pointee.socktype, address.pointee.protocol)
    if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return fd
    #else
    return socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
    #endif
}

extension CurlTransfer {
    /// Whether the environment names a proxy that libcurl would use for a
    /// request of this scheme (`http_proxy`; `https_proxy` or `HTTPS_PROXY`;
    /// then `all_proxy` or `ALL_PROXY`), as libcurl reads them.
    static func environmentNamesProxy(https: Bool) -> Bool {
        let names = https ? ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] : ["http_proxy", "all_proxy", "ALL_PROXY"]
        return names.contains { name in
            guard let value = getenv(name) else { return false }
            return value.pointee != 0
        }
    }

    /// Whether the address rule refuses `address`; when it does, the
    /// address is kept for the error. Any address but an IPv4 or IPv6 one is refused.
    func refuses(_ address: UnsafeMutablePointer<curl_sockaddr>) -> Bool {
        let family = address.pointee.family
        let length = Int(address.pointee.addrlen)
        // `addr` is libcurl's storage for the whole address (struct sockaddr
        // is only its start): read it by the family's own type, within addrlen.
        let isInternal: Bool? = withUnsafeMutablePointer(to: &address.pointee.addr) { start in
            let raw = UnsafeRawPointer(start)
            switch family {
            case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
                let ipv4 = raw.load(as: sockaddr_in.self)
                return withUnsafeBytes(of: ipv4.sin_addr) { HostAddress.isInternal(ipv4: Array($0)) }
            case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
                let ipv6 = raw.load(as: sockaddr_in6.self)
                return withUnsafeBytes(of: ipv6.sin6_addr) { HostAddress.isInternal(ipv6: Array($0)) }
            default:
                return nil
            }
        }
        guard isInternal == false else {
            refusedAddress = Self.text(of: address, family: family) ?? "an address of family \(family)"
            return true
        }
        return false
    }

    /// The numeric text of an IPv4 or IPv6 address (`10.0.0.5`, `::1`).
    private static func text(of address: UnsafeMutablePointer<curl_sockaddr>, family: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written: UnsafePointer<CChar>? = withUnsafeMutablePointer(to: &address.pointee.addr) { start in
            let raw = UnsafeRawPointer(start)
            switch family {
            case AF_INET:
                var ipv4 = raw.load(as: sockaddr_in.self).sin_addr
                return inet_ntop(AF_INET, &ipv4, &buffer, socklen_t(buffer.count))
            case AF_INET6:
                var ipv6 = raw.load(as: sockaddr_in6.self).sin6_addr
                return inet_ntop(AF_INET6, &ipv6, &buffer, socklen_t(buffer.count))
            default:
                return nil
            }
        }
        guard written != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The error of a transfer the address rule stopped: it names the host
    /// and the address refused (neither is a secret).
    func internalAddressError(refused address: String) -> HTTPTransportError {
        let host = url.host ?? "the host"
        return HTTPTransportError.internalAddress.with(
            message: "\(host) resolved to \(address), an internal address, and this request may connect only to public addresses")
    }
}
