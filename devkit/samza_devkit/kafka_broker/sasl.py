"""SASL authentication for the development broker (a SASL_PLAINTEXT listener): PLAIN and OAUTHBEARER.

Kafka's flow (KIP-43, KIP-152): a client may send ApiVersions, then SaslHandshake v1 naming its mechanism, then
SaslAuthenticate requests carrying the mechanism's bytes; any other request before authentication succeeded closes
the connection, and so does a failed authentication after its SaslAuthenticate answer (error
SASL_AUTHENTICATION_FAILED with a message).

* PLAIN (RFC 4616): ``authzid NUL user NUL password`` checked against ``SaslConfig.plain_users``.
* OAUTHBEARER (RFC 7628, KIP-255): the client's first message ``n,,\\x01auth=Bearer <token>\\x01...\\x01\\x01``.
  The token must be a JWS signed with HS256 under ``SaslConfig.oauthbearer_secret`` (a real broker checks the
  signature against the identity provider's keys: the same kind of check), carry a ``sub`` claim (Kafka's
  default principal claim) and an ``exp`` in the future. Unsigned (``alg: none``) tokens -- what librdkafka
  makes up when no token provider is configured -- are refused. Kafka answers a bad token with an error
  challenge the client acknowledges before the failure; this broker answers the failure at once (clients
  report the same authentication error).

:func:`make_token` signs tokens for tests; ``samza_devkit.oauth`` has a token provider built on it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field

__all__ = ["SaslConfig", "SaslSession", "make_token", "verify_token"]

PLAIN = "PLAIN"
OAUTHBEARER = "OAUTHBEARER"


@dataclass(frozen=True)
class SaslConfig:
    """Which mechanisms the listener enables and what they check. Empty: no SASL (PLAINTEXT listener)."""

    plain_users: dict[str, str] = field(default_factory=dict)
    oauthbearer_secret: str | None = None

    @property
    def mechanisms(self) -> list[str]:
        return [m for m, on in ((PLAIN, bool(self.plain_users)), (OAUTHBEARER, self.oauthbearer_secret is not None))
                if on]

    @property
    def enabled(self) -> bool:
        return bool(self.mechanisms)


@dataclass
class SaslSession:
    """One connection's authentication state."""

    mechanism: str | None = None
    principal: str | None = None
    authenticated: bool = False
    failed: bool = False


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_token(secret: str, subject: str, lifetime_s: float = 3600.0, now: float | None = None,
               alg: str = "HS256") -> tuple[str, float]:
    """``(compact JWS, expiry epoch seconds)`` for ``subject``, signed with ``secret`` (``alg="none"``: unsigned)."""
    issued = time.time() if now is None else now
    expiry = issued + lifetime_s
    header = _b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": subject, "iat": int(issued), "exp": int(expiry)}).encode())
    signing_input = f"{header}.{payload}"
    signature = "" if alg == "none" else _b64url(hmac.new(secret.encode(), signing_input.encode(),
                                                           hashlib.sha256).digest())
    return f"{signing_input}.{signature}", expiry


def verify_token(secret: str, token: str, now: float | None = None) -> str:
    """The token's subject; ``ValueError`` saying what is wrong (never echoing the token)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not a compact JWS (header.payload.signature)")
    try:
        header = json.loads(_unb64url(parts[0]))
        payload = json.loads(_unb64url(parts[1]))
    except (ValueError, UnicodeDecodeError):
        raise ValueError("header or payload is not base64url JSON") from None
    if header.get("alg") != "HS256":
        raise ValueError(f"signature algorithm {header.get('alg')!r} is not accepted (HS256 expected)")
    expected = hmac.new(secret.encode(), f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
    try:
        given = _unb64url(parts[2])
    except ValueError:
        raise ValueError("signature is not base64url") from None
    if not hmac.compare_digest(expected, given):
        raise ValueError("signature does not verify")
    subject = payload.get("sub")
    if not isinstance(subject, str) or not subject:
        raise ValueError("no 'sub' claim")
    exp = payload.get("exp")
    if not isinstance(exp, (int, float)) or exp <= (time.time() if now is None else now):
        raise ValueError("token expired (or no 'exp' claim)")
    return subject


def _plain(config: SaslConfig, auth: bytes) -> str:
    fields = auth.split(b"\x00")
    if len(fields) != 3:
        raise ValueError("malformed PLAIN message")
    user, password = fields[1].decode("utf-8", "replace"), fields[2].decode("utf-8", "replace")
    expected = config.plain_users.get(user)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise ValueError("Invalid username or password")
    return user


def _oauthbearer(config: SaslConfig, auth: bytes) -> str:
    text = auth.decode("utf-8", "replace")
    if not text.startswith(("n,", "y,")):
        raise ValueError("malformed OAUTHBEARER message (no GS2 header)")
    entries = text.split("\x01")
    bearer = next((e[len("auth="):] for e in entries if e.startswith("auth=")), None)
    if bearer is None or not bearer.lower().startswith("bearer "):
        raise ValueError("malformed OAUTHBEARER message (no 'auth=Bearer <token>')")
    try:
        return verify_token(config.oauthbearer_secret or "", bearer[len("bearer "):].strip())
    except ValueError as err:
        raise ValueError(f"invalid token: {err}") from None


def authenticate(config: SaslConfig, session: SaslSession, auth: bytes) -> str | None:
    """Check one SaslAuthenticate message of ``session``; ``None`` on success, else the error message."""
    if session.mechanism is None or session.authenticated:
        session.failed = True
        return "SaslAuthenticate outside a SASL handshake"
    try:
        check = _plain if session.mechanism == PLAIN else _oauthbearer
        session.principal = check(config, auth)
    except ValueError as err:
        session.failed = True
        return f"Authentication failed during authentication due to invalid credentials with SASL mechanism " \
               f"{session.mechanism}: {err}"
    session.authenticated = True
    return None
