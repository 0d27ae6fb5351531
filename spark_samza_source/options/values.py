"""The typed reading of option values, and the redaction of secret ones: what every option kind is built on.

Spark hands a Python data source its options as a case-insensitive dict of strings (keys lower-cased). Every
reader here raises :class:`ConfigError` naming the option, the value, what is allowed and how to fix it.
Values of secret options are never echoed. Secrecy is one declaration (``secrets.py``: librdkafka's sensitive
properties, the Java client's, the AWS credentials, the store URI's), not a flag per entry, because the ``kafka.*``
pass-through (``kafka.sasl.password``, ``kafka.ssl.key.pem``) has no entries; an entry's ``secret`` and the
reference's "secret" mark come from the same declaration.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError
from .secrets import is_secret_option, shown

__all__ = ["Options", "is_secret_option", "json_object", "parse_duration_ms", "shown"]


class Options:
    """Read-only view of the user's options with typed getters; remembers which keys were consumed."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self._raw = {str(k).lower(): ("" if v is None else str(v)) for k, v in raw.items()}
        self.used: set[str] = set()

    def keys(self) -> list[str]:
        return list(self._raw)

    def has(self, name: str) -> bool:
        return name.lower() in self._raw

    def raw(self, name: str) -> str | None:
        key = name.lower()
        self.used.add(key)
        return self._raw.get(key)

    def prefixed(self, prefix: str) -> dict[str, str]:
        """All options starting with ``prefix`` (lower-cased), with the prefix removed."""
        prefix = prefix.lower()
        out = {}
        for key, value in self._raw.items():
            if key.startswith(prefix):
                self.used.add(key)
                out[key[len(prefix):]] = value
        return out

    def string(self, name: str, default: str | None = None, *, required: bool = False, hint: str = "") -> str | None:
        value = self.raw(name)
        if value is None or value.strip() == "":
            if required:
                raise ConfigError(f"option '{name}' is required{': ' + hint if hint else ''}")
            return default
        return value.strip()

    def boolean(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise ConfigError(f"option '{name}' must be 'true' or 'false', got {shown(name, value)}")

    def integer(self, name: str, default: int | None, *, minimum: int | None = None) -> int | None:
        value = self.raw(name)
        if value is None or value.strip() == "":
            return default
        try:
            number = int(value.strip())
        except ValueError:
            raise ConfigError(f"option '{name}' must be a whole number, got {shown(name, value)}") from None
        if minimum is not None and number < minimum:
            raise ConfigError(f"option '{name}' must be at least {minimum}, got {number}")
        return number

    def duration_ms(self, name: str, default_ms: int, *, minimum_ms: int = 0) -> int:
        value = self.raw(name)
        if value is None or value.strip() == "":
            return default_ms
        ms = parse_duration_ms(value, name)
        if ms < minimum_ms:
            raise ConfigError(f"option '{name}' must be at least {minimum_ms} ms, got {shown(name, value)}")
        return ms

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.raw(name)
        if value is None or value.strip() == "":
            return default
        for candidate in allowed:
            if value.strip().lower() == candidate.lower():
                return candidate
        raise ConfigError(f"option '{name}' must be one of {', '.join(allowed)}; got {shown(name, value)}")


def json_object(text: str, *, empty_ok: bool = False) -> dict[str, Any]:
    """``text`` as a JSON object (non-empty unless ``empty_ok``); ``ValueError`` or ``RecursionError`` (JSON nested
    deeper than Python's recursion limit) otherwise, for the caller to turn into its option's message."""
    parsed = json.loads(text)
    if not isinstance(parsed, dict) or not (parsed or empty_ok):
        raise ValueError(f"expected a{'' if empty_ok else ' non-empty'} JSON object")
    return parsed


_DURATION_RE = re.compile(r"^\s*(\d{1,18})\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)?\s*$", re.I)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(value: str, name: str) -> int:
    """``500ms``, ``10s``, ``5 minutes``, ``12h``, ``1d``; a bare number is milliseconds (Samza's convention)."""
    match = _DURATION_RE.match(value or "")
    if not match:
        raise ConfigError(
            f"option '{name}' must be a duration such as '500ms', '10s', '5m', '12h' or '1d' "
            f"with its unit; got {shown(name, value)}"
        )
    unit = (match.group(2) or "ms").lower()
    key = "ms" if unit == "ms" else unit[0]
    return int(match.group(1)) * _UNIT_MS[key]
