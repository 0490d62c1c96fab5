"""SaslHandshake and SaslAuthenticate: the broker side of a SASL exchange (and of KIP-368
re-authentication). A failed exchange is answered at once and the connection closed
``connection.failed.authentication.delay.ms`` later, against password guessing (as Kafka).

After SaslHandshake v0 the client sends its tokens as bare size-prefixed frames and gets the
server's tokens the same way (``sasl_token``); a failure there can only be told by closing."""
from __future__ import annotations

from typing import TYPE_CHECKING

import time

from josefk.broker.security.sasl import AuthenticationFailed, new_exchange
from josefk.wire import errors
from josefk.wire.apis import SASL_AUTHENTICATE, SASL_HANDSHAKE

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import SaslAuthenticateRequest, SaslHandshakeRequest

AFTER_SUCCESS = "SaslAuthenticate request received after successful authentication"


def handle_sasl_handshake(broker: Services, ctx, req: SaslHandshakeRequest):
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
    sec.bare_tokens = ctx.version == 0
    return SASL_HANDSHAKE.Response(mechanisms=listener.mechanisms)


async def handle_sasl_authenticate(broker: Services, ctx, req: SaslAuthenticateRequest):
    R = SASL_AUTHENTICATE.Response
    sec = ctx.connection.security
    if sec.exchange is None:
        return R(error_code=errors.ILLEGAL_SASL_STATE, error_message=AFTER_SUCCESS
                 if sec.authenticated else "Unexpected SaslAuthenticate request without "
                 "a SaslHandshake")
    token, failure = await _step(broker, ctx.connection, req.auth_bytes)
    if failure is not None:
        return R(error_code=errors.SASL_AUTHENTICATION_FAILED, error_message=failure)
    done = sec.exchange is None
    return R(auth_bytes=token, error_message=None,
             session_lifetime_ms=sec.listener.reauth_ms if done else 0)


async def sasl_token(broker: Services, connection, token: bytes) -> bytes | None:
    """One bare token after SaslHandshake v0: the server's token to send back bare, or None
    when the exchange failed (the connection is then closed)."""
    reply, failure = await _step(broker, connection, token)
    return None if failure is not None else reply


async def _step(broker: Services, connection, token: bytes):
    """Feed the exchange under way one client token: (server token, None), or (None, the
    failure message) with the connection set to close after the delay."""
    sec = connection.security
    reauthenticating = sec.expires_at is not None
    try:
        reply, user = await sec.exchange.step(token)
        if user is not None and reauthenticating and f"User:{user}" != sec.principal:
            raise AuthenticationFailed(
                f"Cannot change principals during re-authentication from {sec.principal}: "
                f"User:{user}")
    except AuthenticationFailed as e:
        sec.exchange = None
        connection.close_after_response(
            broker.config.int("connection.failed.authentication.delay.ms") / 1000)
        return None, str(e)
    if user is not None:
        sec.exchange = None
        sec.bare_tokens = False
        sec.authenticated = True
        sec.principal = f"User:{user}"
        lifetime = sec.listener.reauth_ms
        sec.expires_at = time.monotonic() + lifetime / 1000 if lifetime > 0 else None
    return reply, None
