"""SaslHandshake and SaslAuthenticate: the broker side of a SASL exchange (and of KIP-368
re-authentication). A failed exchange is answered at once and the connection closed
``connection.failed.authentication.delay.ms`` later, against password guessing (as Kafka)."""
from __future__ import annotations

import time

from broker.sasl import AuthenticationFailed, new_exchange
from wire import errors
from wire.apis import SASL_AUTHENTICATE, SASL_HANDSHAKE

AFTER_SUCCESS = "SaslAuthenticate request received after successful authentication"


def handle_sasl_handshake(broker, ctx, req):
    sec = ctx.connection.security
    listener = sec.listener
    if not listener.sasl or sec.exchange is not None or (sec.authenticated
                                                         and sec.expires_at is None):
        return SASL_HANDSHAKE.Response(error_code=errors.ILLEGAL_SASL_STATE, mechanisms=[])
    mechanism = req.mechanism
    if mechanism not in listener.mechanisms or (sec.mechanism not in (None, mechanism)):
        ctx.connection.close_after_response()
        return SASL_HANDSHAKE.Response(error_code=errors.UNSUPPORTED_SASL_MECHANISM,
                                       mechanisms=listener.mechanisms)
    sec.exchange = new_exchange(mechanism, broker.config, listener.name, broker.credentials)
    sec.mechanism = mechanism
    return SASL_HANDSHAKE.Response(mechanisms=listener.mechanisms)


async def handle_sasl_authenticate(broker, ctx, req):
    R = SASL_AUTHENTICATE.Response
    sec = ctx.connection.security
    exchange = sec.exchange
    if exchange is None:
        return R(error_code=errors.ILLEGAL_SASL_STATE, error_message=AFTER_SUCCESS
                 if sec.authenticated else "Unexpected SaslAuthenticate request without "
                 "a SaslHandshake")
    reauthenticating = sec.expires_at is not None
    try:
        token, user = await exchange.step(req.auth_bytes)
        if user is not None and reauthenticating and f"User:{user}" != sec.principal:
            raise AuthenticationFailed(
                f"Cannot change principals during re-authentication from {sec.principal}: "
                f"User:{user}")
    except AuthenticationFailed as e:
        sec.exchange = None
        ctx.connection.close_after_response(
            broker.config.int("connection.failed.authentication.delay.ms") / 1000)
        return R(error_code=errors.SASL_AUTHENTICATION_FAILED, error_message=str(e))
    if user is None:
        return R(auth_bytes=token, error_message=None)
    sec.exchange = None
    sec.authenticated = True
    sec.principal = f"User:{user}"
    lifetime = sec.listener.reauth_ms
    sec.expires_at = time.monotonic() + lifetime / 1000 if lifetime > 0 else None
    return R(auth_bytes=token, error_message=None, session_lifetime_ms=lifetime)
