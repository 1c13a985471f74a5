"""A password hasher fast enough for a test provider."""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """PBKDF2-SHA256 with 1000 iterations (Django's default is over a million)."""

    iterations = 1000
