"""Java ``.properties`` syntax: what ``java.util.Properties.load`` reads, without a JVM.

``key=value``, ``key: value`` and ``key value``; ``#``/``!`` comments; ``\\`` line continuations (a
continuation's leading whitespace skipped); ``\\t \\n \\r \\f \\uXXXX`` escapes (UTF-16 surrogate pairs joined);
the last of duplicate keys wins. Files are read as UTF-8 (a BOM skipped), or ISO-8859-1, Java's historical
encoding, when the bytes are not UTF-8. A malformed ``\\uXXXX`` escape is a ``ConfigError`` naming the line.

Callers: :func:`~spark_samza_source.samza_config.importer.import_properties` reads a Samza ``job.properties``
with :func:`read_properties`; users call :func:`parse_properties` / :func:`read_properties` directly (the
package re-exports both), and the tests read ``conf/spark-defaults.conf`` and ``conf/log4j2.properties`` with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from . import errors

__all__ = ["parse_properties", "read_properties"]

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``text`` as ``java.util.Properties.load`` does; duplicate keys: the last one wins."""
    return {key: value for _, key, value in _entries(text)}


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file (UTF-8, falling back to ISO-8859-1, Java's historical encoding)."""
    return parse_properties(_read_text(path))


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise errors.file_unreadable(os.fspath(path), err.strerror or err) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("iso-8859-1")


def _entries(text: str) -> list[tuple[int, str, str]]:
    """``(line number, key, value)`` for every entry, in file order."""
    out = []
    for lineno, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        out.append((lineno, _unescape(raw_key, lineno), _unescape(raw_value, lineno)))
    return out


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        lineno = i + 1
        line = natural[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue  # blank or comment: a comment never continues, even when it ends with a backslash
        while _odd_trailing_backslashes(line):
            line = line[:-1]
            if i >= len(natural):
                break  # a backslash at the very end of the file is dropped, as in Java
            line += natural[i].lstrip(_WHITESPACE)  # a continuation's leading whitespace is skipped
            i += 1
        yield lineno, line


def _odd_trailing_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    key_end = value_start = len(line)
    has_separator = False
    backslash = False
    for i, char in enumerate(line):
        if not backslash and char in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not backslash and char in _WHITESPACE:
            key_end, value_start = i, i + 1
            break
        backslash = (not backslash) if char == "\\" else False
    j = value_start
    while j < len(line):
        char = line[j]
        if char not in _WHITESPACE:
            if has_separator or char not in "=:":
                break
            has_separator = True
        j += 1
    return line[:key_end], line[j:]


def _unescape(raw: str, lineno: int) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        i += 1
        if char != "\\":
            out.append(char)
            continue
        if i >= len(raw):
            break
        char = raw[i]
        i += 1
        if char == "u":
            digits = raw[i:i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                shown_escape = "\\u" + digits
                raise errors.escape_invalid(lineno, shown_escape)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    text = "".join(out)
    # \uD83D\uDE00 (UTF-16 surrogate pairs, as Java writes them) -> one code point
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
