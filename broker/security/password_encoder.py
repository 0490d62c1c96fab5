"""Kafka's password encoder (``password.encoder.*``): how a broker keeps a secret among the
configs it stores (ZooKeeper, its dynamic-configs file): encrypted with a key derived from
``password.encoder.secret`` by PBKDF2, written in Kafka's form, comma-separated ``name:value``
pairs (``keyFactoryAlgorithm``, ``cipherAlgorithm``, ``keyLength``, ``salt``, ``iterations``,
``encryptedPassword``, ``passwordLength``, and ``initializationVector`` or, for AES/GCM,
``authenticationTagLength``; bytes in base64), so a Kafka broker with the same secret reads it.
A value encrypted with ``password.encoder.old.secret`` still decodes (a secret rotated).
Confluent's cluster links keep their source's credentials so."""
from __future__ import annotations

import base64
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from josefk.broker.config import ConfigError

KEY_FACTORIES = {"PBKDF2WithHmacSHA512": hashes.SHA512, "PBKDF2WithHmacSHA256": hashes.SHA256,
                 "PBKDF2WithHmacSHA1": hashes.SHA1}
CBC, GCM = "AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"
SALT_BYTES, GCM_TAG_BITS = 256, 128


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _utf16_length(text: str) -> int:
    """A Java String's length (passwordLength): UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


class PasswordEncoder:
    def __init__(self, secret: str, old_secret: str | None = None,
                 key_factory: str = "PBKDF2WithHmacSHA512", cipher: str = CBC,
                 key_length: int = 128, iterations: int = 4096):
        if key_factory not in KEY_FACTORIES:
            raise ConfigError(f"Invalid value {key_factory} for configuration "
                              f"password.encoder.keyfactory.algorithm: one of "
                              f"{', '.join(KEY_FACTORIES)}")
        if cipher not in (CBC, GCM):
            raise ConfigError(f"Invalid value {cipher} for configuration "
                              f"password.encoder.cipher.algorithm: {CBC} or {GCM}")
        if key_length not in (128, 192, 256):
            raise ConfigError(f"Invalid value {key_length} for configuration "
                              "password.encoder.key.length: 128, 192 or 256")
        if iterations < 1024:
            raise ConfigError(f"Invalid value {iterations} for configuration "
                              "password.encoder.iterations: Value must be at least 1024")
        self.secrets = [s for s in (secret, old_secret) if s]
        self.key_factory, self.cipher = key_factory, cipher
        self.key_length, self.iterations = key_length, iterations

    @classmethod
    def from_config(cls, config) -> "PasswordEncoder | None":
        """The broker's encoder; None without ``password.encoder.secret``."""
        secret = config.get("password.encoder.secret")
        if not secret:
            return None
        return cls(secret, config.get("password.encoder.old.secret") or None,
                   config.get("password.encoder.keyfactory.algorithm") or "PBKDF2WithHmacSHA512",
                   config.get("password.encoder.cipher.algorithm"),
                   config.int("password.encoder.key.length"),
                   config.int("password.encoder.iterations"))

    def encode(self, password: str) -> str:
        salt = os.urandom(SALT_BYTES)
        key = _key(self.secrets[0], self.key_factory, self.key_length, salt, self.iterations)
        fields = {"keyFactoryAlgorithm": self.key_factory, "cipherAlgorithm": self.cipher,
                  "keyLength": str(self.key_length), "salt": _b64(salt),
                  "iterations": str(self.iterations)}
        data = password.encode()
        if self.cipher == GCM:
            iv = os.urandom(12)
            encrypted = AESGCM(key).encrypt(iv, data, None)
            fields["authenticationTagLength"] = str(GCM_TAG_BITS)
        else:
            iv = os.urandom(16)
            padder = padding.PKCS7(128).padder()
            encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
            encrypted = encryptor.update(padder.update(data) + padder.finalize()) + \
                encryptor.finalize()
        fields.update(initializationVector=_b64(iv), encryptedPassword=_b64(encrypted),
                      passwordLength=str(_utf16_length(password)))
        return ",".join(f"{k}:{v}" for k, v in fields.items())

    def decode(self, encoded: str) -> str:
        """The password; ConfigError if no secret of this broker's decodes it."""
        try:
            fields = dict(pair.split(":", 1) for pair in encoded.split(","))
            salt, iv = (base64.b64decode(fields[k]) for k in ("salt", "initializationVector"))
            encrypted = base64.b64decode(fields["encryptedPassword"])
            cipher, length = fields["cipherAlgorithm"], int(fields["passwordLength"])
            factory = fields.get("keyFactoryAlgorithm", "PBKDF2WithHmacSHA512")
            key_length, iterations = int(fields["keyLength"]), int(fields["iterations"])
        except (KeyError, ValueError) as e:
            raise ConfigError(f"Password could not be decoded: {e}") from None
        for secret in self.secrets:
            key = _key(secret, factory, key_length, salt, iterations)
            try:
                password = _decrypt(cipher, key, iv, encrypted).decode()
            except ValueError:  # a wrong key: bad padding, a failed tag, not UTF-8
                continue
            if _utf16_length(password) == length:
                return password
        raise ConfigError("Password could not be decoded")


def _key(secret: str, factory: str, key_length: int, salt: bytes, iterations: int) -> bytes:
    algorithm = KEY_FACTORIES.get(factory)
    if algorithm is None:
        raise ConfigError(f"Password could not be decoded: key factory {factory}")
    return PBKDF2HMAC(algorithm(), key_length // 8, salt, iterations).derive(secret.encode())


def _decrypt(cipher: str, key: bytes, iv: bytes, encrypted: bytes) -> bytes:
    if cipher == GCM:
        try:
            return AESGCM(key).decrypt(iv, encrypted, None)
        except InvalidTag:
            raise ValueError("tag") from None
    if cipher != CBC:
        raise ValueError(cipher)
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    return unpadder.update(decryptor.update(encrypted) + decryptor.finalize()) + \
        unpadder.finalize()
