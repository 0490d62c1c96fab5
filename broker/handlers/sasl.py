"""SaslHandshake and SaslAuthenticate: the broker side of a SASL exchange (and of KIP-368
re-authentication). They return what the exchange does to the connection with the response
(`BareTokens`, `Authenticated`, `CloseAfter`); a failed exchange is answered at once and the
connection closed ``connection.failed.authentication.delay.ms`` later, against password
guessing (as Kafka).

After SaslHandshake v0 the client sends its tokens as bare size-prefixed frames and gets the
server's tokens the same way (``sasl_token``); a failure there can only be told by closing."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security.listeners import Authenticated, BareTokens, CloseAfter, Reply
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
    if not listener.sasl or sec.exchange is not None or (ctx.connection.authenticated
                                                         and sec.expires_at is None):
        return SASL_HANDSHAKE.Response(error_code=errors.ILLEGAL_SASL_STATE, mechanisms=[])
    mechanism = req.mechanism
    if mechanism not in listener.mechanisms or (sec.mechanism not in (None, mechanism)):
        return Reply(SASL_HANDSHAKE.Response(error_code=errors.UNSUPPORTED_SASL_MECHANISM,
                                             mechanisms=listener.mechanisms), CloseAfter())
    sec.exchange = new_exchange(mechanism, broker.config, listener.name, broker.credentials)
    sec.mechanism = mechanism
    resp = SASL_HANDSHAKE.Response(mechanisms=listener.mechanisms)
    return Reply(resp, BareTokens()) if ctx.version == 0 else resp


async def handle_sasl_authenticate(broker: Services, ctx, req: SaslAuthenticateRequest):
    R = SASL_AUTHENTICATE.Response
    sec = ctx.connection.security
    if sec.exchange is None:
        return R(error_code=errors.ILLEGAL_SASL_STATE, error_message=AFTER_SUCCESS
                 if ctx.connection.authenticated else "Unexpected SaslAuthenticate request "
                 "without a SaslHandshake")
    token, failure, event = await _step(broker, sec, req.auth_bytes)
    if failure is not None:
        return Reply(R(error_code=errors.SASL_AUTHENTICATION_FAILED, error_message=failure),
                     event)
    if event is None:
        return R(auth_bytes=token, error_message=None, session_lifetime_ms=0)
    return Reply(R(auth_bytes=token, error_message=None,
                   session_lifetime_ms=sec.listener.reauth_ms), event)


async def sasl_token(broker: Services, sec, token: bytes):
    """One bare token after SaslHandshake v0: (the server's token to send back bare, or None
    when the exchange failed, which only a close can tell; the event for the connection)."""
    reply, _failure, event = await _step(broker, sec, token)
    return reply, event


async def _step(broker: Services, sec, token: bytes):
    """Feed the exchange under way one client token: (server token, None, `Authenticated` once
    the exchange is done, else None), or (None, the failure message, `CloseAfter` the delay)."""
    reauthenticating = sec.expires_at is not None
    try:
        reply, user = await sec.exchange.step(token)
        if user is not None and reauthenticating and f"User:{user}" != sec.principal:
            raise AuthenticationFailed(
                f"Cannot change principals during re-authentication from {sec.principal}: "
                f"User:{user}")
    except AuthenticationFailed as e:
        sec.exchange = None
        return None, str(e), CloseAfter(
            broker.config.int("connection.failed.authentication.delay.ms") / 1000)
    if user is None:
        return reply, None, None
    sec.exchange = None
    return reply, None, Authenticated(f"User:{user}")
