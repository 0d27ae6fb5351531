"""The ``metadata.store`` URI's words and the redaction of its secrets, shared by the store opener
(``metadata/__init__.py``) and every backend.

A module of its own so the backends import it, not the package that imports them: the package loads a backend
only when its URI is opened (so ``file:`` never imports boto3), and no import runs in a circle.
"""

from __future__ import annotations

import re
import urllib.parse

from ..options.common import METADATA_STORE

__all__ = ["OPTION", "PYARROW_SCHEMES", "REDACTED", "SUPPORTED_FORMS", "redact_uri", "scrub_secrets"]

#: the option users set; named in every configuration error
OPTION = METADATA_STORE.name

SUPPORTED_FORMS = (
    "memory:[NAME], file:///ABSOLUTE/PATH or a plain directory path, "
    "s3://BUCKET/PREFIX?region=REGION&endpoint=URL (boto3), "
    "gs://BUCKET/PREFIX, abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX, "
    "hdfs://HOST/PATH (any URI pyarrow.fs.FileSystem.from_uri supports), "
    "dynamodb://TABLE?region=REGION&endpoint=URL"
)

#: schemes handed to pyarrow.fs.FileSystem.from_uri (s3 has its own boto3 store, with conditional writes)
PYARROW_SCHEMES = frozenset({"gs", "gcs", "abfs", "abfss", "hdfs", "viewfs", "local", "mock"})

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Query parameter names whose values are secrets (matched anywhere in the name, case-insensitively):
# secret_key, aws_secret_access_key, session_token, sas_token, account_key, password, sig (Azure SAS) ...
_SECRET_PARAM_RE = re.compile(r"secret|passw|pwd|token|credential|signature|^sig$|key|auth|sas", re.I)
_PARAM_RE = re.compile(r"([?&;])([^=&;#]*)=([^&;#]*)")
REDACTED = "***"


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
    return sorted((s for s in found if len(s) >= 3), key=len, reverse=True)


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
