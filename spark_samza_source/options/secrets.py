"""Which option values are secrets, and how a value or a text is shown without them: the one declaration.

Every place that prints an option or a client library's message goes through this module: option errors
(``values.shown``), the librdkafka checks and client errors (``kafka/options.py``, ``kafka/driver/admin.py``, the
consumer cache), the ``job.properties`` importer's notes, the operator CLI's scrubber, the store URI's redaction
(``metadata/uri.py`` re-exports it) and Spark's own ``explain()`` (``spark_redaction_regex``, which
``spark_samza_source.register`` adds to the session).

Secrecy comes from lists, not from words in a name: librdkafka's own marking of its sensitive properties, the Java
client names the source translates, the AWS credential options, and the store URI's credentials. A name-word net
(:data:`_NAME_WORDS`) stays behind the lists for names no list can know (a property of a newer librdkafka, a
Samza setting with ``password`` in its name): hiding a harmless value costs only readability.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["AWS_SECRET_OPTIONS", "JAVA_CLIENT_SECRETS", "LIBRDKAFKA_SENSITIVE", "REDACTED", "URI_OPTIONS",
           "displayed", "is_secret_option", "redact_uri", "scrub", "scrub_secrets", "secret_values", "shown",
           "spark_redaction_regex"]

REDACTED = "***"

#: librdkafka's sensitive properties: those its ``src/rdkafka_conf.c`` marks ``_RK_SENSITIVE`` (read in v2.15.0;
#: the bundled librdkafka is checked against this list by ``tests/unit/options/test_secrets.py``, through the
#: configuration dump librdkafka prints with ``debug=conf``, where it writes ``[redacted]`` for exactly these).
#: librdkafka counts the user name and the key's path as sensitive too; so does this package.
LIBRDKAFKA_SENSITIVE = frozenset({
    "ssl.key.location", "ssl.key.password", "ssl.key.pem", "ssl_key", "ssl.ca.pem", "ssl.keystore.password",
    "sasl.username", "sasl.password", "sasl.oauthbearer.config", "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.assertion.private.key.file", "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem",
})

#: Java Kafka client settings holding credentials, which the source translates or refuses with a reason
#: (``kafka/java_client.py``); a JAAS line holds the user name and password.
JAVA_CLIENT_SECRETS = frozenset({
    "sasl.jaas.config", "ssl.truststore.password", "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
})

#: samza-kinesis's AWS credential options and their ``kinesis.*`` aliases (lower case, as Spark hands them over).
#: MSK IAM's settings (``aws_profile``, ``aws_role_arn``) sit in ``kafka.sasl.oauthbearer.config``, which librdkafka
#: marks sensitive; the token itself is made in the callback and never is an option.
AWS_SECRET_OPTIONS = frozenset({
    "awsaccesskeyid", "awssecretkey", "sessiontoken",
    "kinesis.awsaccesskeyid", "kinesis.awssecretkey", "kinesis.sessiontoken",
})

#: options whose value is a URI that may carry credentials (``s3://KEY:SECRET@bucket``, ``?secret_key=...``): shown
#: with the credentials redacted (:func:`redact_uri`), the rest kept, because the location helps the reader
URI_OPTIONS = frozenset({"metadata.store", "endpointurl", "dynamodbendpointurl", "stsendpointurl",
                         "kinesis.endpointurl", "kinesis.dynamodbendpointurl", "kinesis.stsendpointurl"})

_CLIENT_SECRETS = LIBRDKAFKA_SENSITIVE | JAVA_CLIENT_SECRETS
#: the net behind the lists (see the module docstring); compared without '.', '_' and '-'
_NAME_WORDS = ("password", "passphrase", "secret", "credential", "token", "jaas", "privatekey", "accesskey")


def _client_property(name: str) -> str:
    """The client property an option name carries: ``kafka.ssl.key.pem`` and Samza's
    ``systems.kafka.consumer.ssl.key.pem`` both carry ``ssl.key.pem``."""
    for known in _CLIENT_SECRETS:
        if name == known or name.endswith("." + known):
            return known
    return name


def is_secret_option(name: str) -> bool:
    """Whether the value of option (or client property) ``name`` is a credential: then never logged or shown."""
    lowered = str(name).strip().lower()
    if _client_property(lowered) in _CLIENT_SECRETS or lowered in AWS_SECRET_OPTIONS:
        return True
    squeezed = re.sub(r"[._-]", "", lowered)
    return any(word in squeezed for word in _NAME_WORDS)


def displayed(name: str, value: Any) -> str:
    """The value as a listing of options shows it: ``***`` for a secret, a URI without its credentials,
    anything else as written."""
    if is_secret_option(name):
        return REDACTED
    if str(name).strip().lower() in URI_OPTIONS and isinstance(value, str):
        return redact_uri(value)
    return str(value)


def shown(name: str, value: Any) -> str:
    """The value as it may appear in an error or a log line: :func:`displayed`, quoted unless redacted."""
    text = displayed(name, value)
    return text if text == REDACTED else repr(text if isinstance(value, str) else value)


# ---- the secret substrings of a configuration, and texts without them ---------------------------------------
_MIN_SECRET = 3  # shorter values would blank out ordinary words of a message
_PEM_LINE = 16  # a PEM body line quoted alone (an OpenSSL message) is still a piece of the key
_JAAS_VALUE = re.compile(r'=\s*"((?:[^"\\]|\\.)*)"|=\s*([^\s";]+)')


def _pieces(name: str, value: str) -> set[str]:
    found = {value, value.strip()}
    found.update(line.strip() for line in value.splitlines() if len(line.strip()) >= _PEM_LINE)
    if _client_property(name) == "sasl.jaas.config":
        for quoted, bare in _JAAS_VALUE.findall(value):
            found.add(re.sub(r"\\(.)", r"\1", quoted) if quoted else bare)
    return found


def secret_values(options: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> list[str]:
    """Every secret substring of ``options`` (the values of secret options, the lines of a PEM key, the values
    of a JAAS line, the credentials of URI options), longest first so that replacing them leaves no tail."""
    items = options.items() if isinstance(options, Mapping) else options
    found: set[str] = set()
    for name, value in items:
        if not isinstance(value, str) or not value:
            continue
        lowered = str(name).strip().lower()
        if is_secret_option(lowered):
            found.update(_pieces(lowered, value))
        elif lowered in URI_OPTIONS:
            found.update(_uri_secrets(value))
    return sorted((s for s in found if len(s) >= _MIN_SECRET), key=len, reverse=True)


def scrub(text: Any, options: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> str:
    """``text`` (an error, a client library's message) with every secret of ``options`` replaced by ``***``."""
    text = str(text)
    for secret in secret_values(options):
        text = text.replace(secret, REDACTED)
    return text


def spark_redaction_regex() -> str:
    """A regular expression for Spark's ``spark.sql.redaction.options.regex`` that matches every secret option's
    name, so ``explain()`` and the SQL UI print ``*********(redacted)`` for them as for Spark's own secrets (its
    default only knows ``secret|password|token|access[.]?key``)."""
    names = sorted({*(f"kafka.{n}" for n in _CLIENT_SECRETS), *AWS_SECRET_OPTIONS})
    return "(?i)^(" + "|".join(re.escape(n) for n in names) + ")$|" + "|".join(_NAME_WORDS)


# ---- URIs --------------------------------------------------------------------------------------------------
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Query parameter names whose values are secrets (matched anywhere in the name, case-insensitively):
# secret_key, aws_secret_access_key, session_token, sas_token, account_key, password, sig (Azure SAS) ...
_SECRET_PARAM_RE = re.compile(r"secret|passw|pwd|token|credential|signature|^sig$|key|auth|sas", re.I)
_PARAM_RE = re.compile(r"([?&;])([^=&;#]*)=([^&;#]*)")


def _userinfo_span(uri: str) -> tuple[int, int] | None:
    """Where ``user[:password]`` sits in ``scheme://user:password@host/...``, or None.

    Deliberately forgiving, because secrets are often pasted without percent-encoding and may contain '/'
    (AWS secret keys do) or '@': the userinfo runs to the LAST '@' before any '?' or '#', unless the
    authority is empty (``file:///...``) or the text before that '@' looks like a path ('/' but no ':').
    When in doubt this over-redacts (``hdfs://nn:8020/a@b`` becomes ``hdfs://***@b``): that only costs
    readability, a leaked secret costs more.
    """
    m = _SCHEME_RE.match(uri)
    if m is None or not uri.startswith("//", m.end()):
        return None
    start = m.end() + 2
    if uri.startswith("/", start):
        return None
    end = len(uri)
    for sep in "?#":
        i = uri.find(sep, start)
        if i != -1:
            end = min(end, i)
    at = uri.rfind("@", start, end)
    if at == -1:
        return None
    userinfo = uri[start:at]
    if "/" in userinfo and ":" not in userinfo:
        return None  # an '@' inside a path, e.g. s3://bucket/user@host/x
    return start, at


def redact_uri(uri: str) -> str:
    """``uri`` with credentials replaced by ``***``: safe for ``store.uri``, errors and logs.

    Removes ``user:password@`` (the whole userinfo when it holds a password; a bare user name such as an
    ``abfs://container@account`` container is kept) and the values of query parameters whose names look like
    secrets (``secret_key``, ``aws_secret_access_key``, ``session_token``, ``access_key``, ``sig`` ...).
    Anything that is not a string is replaced entirely.
    """
    if not isinstance(uri, str):
        return REDACTED
    span = _userinfo_span(uri)
    if span is not None:
        start, at = span
        if ":" in uri[start:at]:
            uri = uri[:start] + REDACTED + uri[at:]
    q = uri.find("?")
    if q == -1:
        return uri

    def repl(m: re.Match[str]) -> str:
        name = m.group(2)
        if _SECRET_PARAM_RE.search(urllib.parse.unquote_plus(name)):
            return f"{m.group(1)}{name}={REDACTED}"
        return m.group(0)

    return uri[:q] + _PARAM_RE.sub(repl, uri[q:])


def _uri_secrets(uri: str) -> list[str]:
    """The secret substrings of ``uri`` (raw and percent-decoded), longest first."""
    found: set[str] = set()
    span = _userinfo_span(uri)
    if span is not None:
        userinfo = uri[span[0]:span[1]]
        if ":" in userinfo:
            user, _, password = userinfo.partition(":")
            found.update({user, password, urllib.parse.unquote(user), urllib.parse.unquote(password)})
    q = uri.find("?")
    if q != -1:
        for m in _PARAM_RE.finditer(uri[q:]):
            if _SECRET_PARAM_RE.search(urllib.parse.unquote_plus(m.group(2))):
                found.update({m.group(3), urllib.parse.unquote_plus(m.group(3)), urllib.parse.unquote(m.group(3))})
    return sorted((s for s in found if len(s) >= _MIN_SECRET), key=len, reverse=True)


def scrub_secrets(text: str, uri: str, limit: int = 500) -> str:
    """``text`` (typically a client library's error message) with ``uri`` and its secrets redacted.

    Long messages are cut to ``limit`` characters: some libraries print pages of search paths.
    """
    text = str(text)
    if isinstance(uri, str) and uri:
        text = text.replace(uri, redact_uri(uri))
        for secret in _uri_secrets(uri):
            text = text.replace(secret, REDACTED)
    if len(text) > limit:
        text = text[:limit] + " ..."
    return text
