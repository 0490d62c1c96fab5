import base64
import hashlib

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from josefk.broker.config import BrokerConfig, ConfigError
from josefk.broker.security.password_encoder import CBC, GCM, PasswordEncoder


def fields(encoded):
    return dict(pair.split(":", 1) for pair in encoded.split(","))


@pytest.mark.parametrize("cipher", [CBC, GCM])
def test_a_password_round_trips_in_kafkas_form(cipher):
    encoder = PasswordEncoder("s3cret", cipher=cipher)
    password = 'required username="bob" password="p,a:s=s ü 😀";'
    encoded = encoder.encode(password)
    assert password not in encoded and "p,a:s" not in encoded
    f = fields(encoded)
    assert f["cipherAlgorithm"] == cipher and f["keyFactoryAlgorithm"] == "PBKDF2WithHmacSHA512"
    assert (f["keyLength"], f["iterations"]) == ("128", "4096")
    assert len(base64.b64decode(f["salt"])) == 256
    assert int(f["passwordLength"]) == len(password) + 1  # UTF-16 code units, as Java's
    assert ("authenticationTagLength" in f) == (cipher == GCM)
    assert encoder.decode(encoded) == password
    assert encoder.encode(password) != encoded  # a salt and an IV of its own each time


def test_a_value_encrypted_by_hand_from_kafkas_recipe_decodes():
    """PBKDF2 (hashlib's, not the encoder's) with HMAC-SHA512 over the secret, then
    AES/CBC/PKCS5Padding: what Kafka's EncryptingPasswordEncoder writes."""
    salt, iv, password = bytes(range(256)), bytes(range(16)), "kafka-secret"
    key = hashlib.pbkdf2_hmac("sha512", b"the secret", salt, 4096, 16)
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    encrypted = encryptor.update(padder.update(password.encode()) + padder.finalize()) + \
        encryptor.finalize()
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    encoded = (f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:{CBC},keyLength:128,"
               f"salt:{b64(salt)},iterations:4096,initializationVector:{b64(iv)},"
               f"encryptedPassword:{b64(encrypted)},passwordLength:{len(password)}")
    assert PasswordEncoder("the secret").decode(encoded) == password


def test_the_old_secret_still_decodes_and_a_wrong_one_does_not():
    encoded = PasswordEncoder("old").encode("pw")
    assert PasswordEncoder("new", old_secret="old").decode(encoded) == "pw"
    with pytest.raises(ConfigError, match="Password could not be decoded"):
        PasswordEncoder("new").decode(encoded)
    with pytest.raises(ConfigError, match="Password could not be decoded"):
        PasswordEncoder("new").decode("not,kafka's:form")


def test_the_broker_settings_make_it_and_bad_ones_are_refused_in_one_line():
    assert PasswordEncoder.from_config(BrokerConfig({})) is None
    encoder = PasswordEncoder.from_config(BrokerConfig({
        "password.encoder.secret": "x", "password.encoder.cipher.algorithm": GCM,
        "password.encoder.key.length": "256", "password.encoder.iterations": "2048"}))
    assert fields(encoder.encode("pw"))["keyLength"] == "256"
    with pytest.raises(ConfigError, match="password.encoder.cipher.algorithm"):
        PasswordEncoder("x", cipher="DES/CBC/PKCS5Padding")
    with pytest.raises(ConfigError, match="password.encoder.iterations"):
        PasswordEncoder("x", iterations=10)
