"""The RSA keys that sign ID tokens. No Django here: serve.py makes the run's
first key before Django's settings are read."""

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def new_rsa_private_key_pem():
    """A fresh RSA 2048 private key, PKCS #8 PEM: what DOT's OIDC_RSA_PRIVATE_KEY takes."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")
