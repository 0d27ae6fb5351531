"""librdkafka's reports that mean "this client's security settings are wrong": failures retrying cannot cure.

librdkafka retries a broker connection for ever, so a call made with a wrong CA, an expired client certificate or
a wrong password only times out (after ``endpoint.retryTimeout``, 60 s by default) with "Broker transport failure".
The cause is known long before: librdkafka reports it to the client's ``error_cb`` (``_SSL``, ``_AUTHENTICATION``,
``_TRANSPORT`` with an OpenSSL alert) or, for a client not speaking TLS to a TLS listener, only in its log (the
broker closes the connection before answering ``ApiVersion``). :class:`SecurityWatch` collects these for a client
and says which error ends the call; the driver's admin (``driver/admin.py``) asks it after each failed attempt.

Pure: no client is made here. Texts go through ``options/secrets.scrub`` before they reach an error.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..options.secrets import scrub
from . import errors
from .errors import KafkaSourceError

__all__ = ["SecurityWatch", "WatchingLogger", "key_unreadable"]

#: disconnects before the first answer, with a client not speaking TLS, that name a TLS listener as the cause:
#: one could be a broker restarting, three in a row before any answer are not
_PLAINTEXT_DISCONNECTS = 3
_PLAIN_PROTOCOLS = ("plaintext", "sasl_plaintext")
#: an _SSL report with these words is a connection lost during the handshake (a broker restarting): an outage,
#: retried like one, not a wrong setting
_LOST_DURING_HANDSHAKE = ("Disconnected", "reset by peer", "timed out", "Connection refused", "Broken pipe")


def key_unreadable(text: str, where: str) -> KafkaSourceError | None:
    """The error for librdkafka refusing to create a client because the private key does not load, or None."""
    if ("ssl.key" in text or "ssl_key" in text) and ("PEM lib" in text or "bad decrypt" in text
                                                     or "not in PEM format" in text):
        return errors.tls_key_unreadable(where, text)
    return None


class SecurityWatch:
    """Fed a client's ``error_cb`` errors and log lines; :attr:`failure` is the error that should end its call."""

    def __init__(self, client_conf: Mapping[str, str], where: str, *, token_provider_option: str) -> None:
        self._conf = dict(client_conf)
        self._where = where
        self._token_option = token_provider_option
        self._protocol = str(self._conf.get("security.protocol", "plaintext")).strip().lower()
        self._disconnects = 0
        self._lock = threading.Lock()
        self.failure: KafkaSourceError | None = None

    def answered(self) -> None:
        """The cluster answered a call: a later disconnect is an outage, not a protocol mismatch, and a report
        from before the answer no longer stands for the next call."""
        with self._lock:
            self._disconnects = -1
            self.failure = None

    def scrubbed(self, text: str) -> str:
        return scrub(text, self._conf)

    def on_error(self, code_name: str, text: str) -> None:
        """An ``error_cb`` report (``KafkaError.name()``, ``KafkaError.str()``)."""
        said = scrub(text, self._conf)
        found: KafkaSourceError | None = None
        if code_name in ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED"):
            found = errors.authentication_failed(self._where, said, token_provider_option=self._token_option)
        elif code_name == "_SSL" and "certificate verify failed" in said:
            found = errors.tls_broker_not_trusted(self._where, said)
        elif code_name == "_SSL" and not any(words in said for words in _LOST_DURING_HANDSHAKE):
            found = errors.tls_handshake_failed(self._where, said)
        elif code_name == "_TRANSPORT" and "alert" in said.lower() and ("ssl" in said.lower() or "tls" in said.lower()):
            lowered = said.lower()
            found = (errors.tls_client_certificate_refused(self._where, said) if "certificate" in lowered
                     else errors.tls_handshake_failed(self._where, said))
        if found is not None:
            with self._lock:
                self.failure = self.failure or found

    def on_log(self, text: str) -> None:
        """A librdkafka log line (``FAIL`` lines carry the disconnects librdkafka does not report to error_cb)."""
        if self._protocol not in _PLAIN_PROTOCOLS or "Disconnected" not in text or "APIVERSION_QUERY" not in text:
            return
        with self._lock:
            if self._disconnects < 0:
                return
            self._disconnects += 1
            if self._disconnects >= _PLAINTEXT_DISCONNECTS and self.failure is None:
                self.failure = errors.plaintext_on_tls_listener(self._where, self._protocol.upper())


class WatchingLogger:
    """The ``logger`` confluent-kafka hands librdkafka's log lines to: they go on to ``target`` (Python logging),
    and the watch sees each one."""

    def __init__(self, target, watch: SecurityWatch) -> None:
        self._target = target
        self._watch = watch

    def log(self, level: int, msg: str, *args) -> None:
        text = msg % args if args else msg
        self._watch.on_log(text)
        self._target.log(level, "%s", self._watch.scrubbed(text))
