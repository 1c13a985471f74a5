"""Client ID metadata documents served by the tests themselves, on 127.0.0.1.

DOT's SafeMetadataFetcher refuses every address that is not public (loopback
included) and trusts the system's CAs only: right for a real server, and it
makes a document that a test serves on 127.0.0.1 unreachable. This fetcher
fetches a `client_id` whose host is a loopback IP literal (127.0.0.0/8, ::1)
over https, verifying the certificate against the test CAs only, never the
system's; every other `client_id` goes to DOT's fetcher unchanged (public
addresses only). No name is resolved for the loopback path: `localhost` and
other names still go through DOT's checks and are refused.

The test CAs are, at each fetch:
- the PEM file named by PROVIDER_CIMD_CA_FILE (serve.py --cimd-ca-file, by
  default <run dir>/cimd-ca.pem), read again on every fetch, so that a file
  written after the provider started counts; missing means none;
- the CA certificates POSTed to /test/cimd-trust since the provider started.
With neither, a loopback client_id is refused like any other private address.
The rest of DOT's rules stay: https only, no redirects, DOT's size limit and
timeout, application/json.
"""

import ipaddress
import os
import threading
import time

import urllib3
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher, _validate_client_id_url
from oauth2_provider.settings import oauth2_settings

from .testing import loopback_only

# A CA a test posts is a few hundred bytes; this bounds the memory a runaway
# test could take.
MAX_TRUSTED_CAS = 256


class _TrustedCAs:
    def __init__(self):
        self._lock = threading.Lock()
        self._pems = []

    def add(self, pem):
        with self._lock:
            if pem in self._pems:
                return len(self._pems)
            if len(self._pems) >= MAX_TRUSTED_CAS:
                raise ValueError(f"at most {MAX_TRUSTED_CAS} CAs")
            self._pems.append(pem)
            return len(self._pems)

    def clear(self):
        with self._lock:
            self._pems.clear()

    def pems(self):
        with self._lock:
            return list(self._pems)


trusted_cas = _TrustedCAs()


def ca_file():
    """The path of the CA file (PROVIDER_CIMD_CA_FILE), or None when not configured."""
    return os.environ.get("PROVIDER_CIMD_CA_FILE") or None


def _is_loopback_literal(hostname):
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def _ssl_context():
    """An SSL context trusting the test CAs only, or None when there are none."""
    import ssl

    path = ca_file()
    file_pem = None
    if path and os.path.isfile(path):
        with open(path, encoding="ascii") as file:
            file_pem = file.read()
    posted = trusted_cas.pems()
    cadata = "".join(pem for pem in ([file_pem] if file_pem and file_pem.strip() else []) + posted)
    if not cadata:
        return None
    # cadata given: create_default_context loads it and not the system's CAs.
    try:
        return ssl.create_default_context(cadata=cadata)
    except ssl.SSLError as error:
        raise CIMDError(f"the test CAs do not load: {error}") from error


class LoopbackMetadataFetcher(SafeMetadataFetcher):
    """DOT's fetcher, plus https on a loopback IP literal with the test CAs."""

    def fetch(self, client_id):
        parsed = _validate_client_id_url(client_id)
        if not _is_loopback_literal(parsed.hostname):
            return super().fetch(client_id)
        context = _ssl_context()
        if context is None:
            raise CIMDError(
                "client_id host is a loopback address and no test CA is trusted "
                "(PROVIDER_CIMD_CA_FILE, /test/cimd-trust)"
            )
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        deadline = time.monotonic() + timeout
        path = parsed.path + (f"?{parsed.query}" if parsed.query else "")
        pool = urllib3.HTTPSConnectionPool(
            host=parsed.hostname,
            port=parsed.port or 443,
            timeout=urllib3.Timeout(connect=timeout, read=timeout, total=max(deadline - time.monotonic(), 0.1)),
            retries=False,
            maxsize=1,
            ssl_context=context,
        )
        try:
            response = pool.urlopen(
                "GET",
                path,
                headers={"Host": parsed.netloc, "Accept": "application/json, application/*+json"},
                redirect=False,
                preload_content=False,
            )
            try:
                return self._read_document(response)
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as error:
            raise CIMDError(f"could not fetch client_id document: {error}") from error
        finally:
            pool.close()


@csrf_exempt
@loopback_only
@require_http_methods(["GET", "POST", "DELETE"])
def cimd_trust(request):
    """POST a PEM CA certificate (the body) for the fetcher to trust; GET how
    many are trusted and the CA file; DELETE forgets the posted ones."""
    if request.method == "POST":
        from cryptography import x509

        pem = request.body.decode("ascii", errors="replace").strip() + "\n"
        try:
            certificates = x509.load_pem_x509_certificates(pem.encode("ascii"))
        except ValueError:
            return JsonResponse(
                {"error": "invalid_request", "error_description": "the body must be PEM CA certificates"}, status=400
            )
        for certificate in certificates:
            try:
                constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
            except x509.ExtensionNotFound:
                constraints = None
            if constraints is None or not constraints.ca:
                return JsonResponse(
                    {"error": "invalid_request", "error_description": "a certificate is not a CA (basicConstraints)"},
                    status=400,
                )
        try:
            count = trusted_cas.add(pem)
        except ValueError as error:
            return JsonResponse({"error": "invalid_request", "error_description": str(error)}, status=400)
        return JsonResponse({"trusted": count, "ca_file": ca_file()})
    if request.method == "DELETE":
        trusted_cas.clear()
    return JsonResponse({"trusted": len(trusted_cas.pems()), "ca_file": ca_file()})
