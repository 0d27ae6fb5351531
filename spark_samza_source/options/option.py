"""One option declared once: its name, the other names it is accepted under, how its value is read and checked,
its default and a one-line description; and a source's whole set of them.

A system's :class:`OptionSpec` (in ``kafka/options.py`` and ``kinesis/options.py``, both including
``options/common.py``'s) is the one place a name, a default or a description is written. Everything else is derived
from it: the known names and the unknown-name check with its "did you mean" (:meth:`OptionSpec.names`), the names
refused with a reason, the AWS connector's aliases, the redaction of secret values (``values.is_secret_option``) and
``docs/options.md`` (``ops/options_reference.py``). A value whose form belongs to a system (per-partition JSON, a
startpoint, a Samza broadcast list) is read here as text; the same ``options.py``, which owns the types it becomes,
parses it further.

Spark hands a Python data source its options with lower-cased names (a case-insensitive dict), so names are compared
lower-cased and shown in their documented spelling.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import UNKNOWN_OPTION, UNSUPPORTED_OPTION, ConfigError, InternalError
from .values import Options, is_secret_option

__all__ = [
    "Count", "Duration", "Flag", "Namespace", "OneOf", "Option", "OptionNames", "OptionSpec", "Text",
    "check_option_names", "format_duration",
]

#: how many close names an error suggests, and how close (difflib's ratio) a name must be to be suggested
_SUGGESTIONS = 3
_CUTOFF = 0.6


def format_duration(ms: int) -> str:
    """``ms`` as the duration options are written, in the largest unit that divides it at least twice (``60s``,
    ``5m``, ``12h``)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0 and ms >= 2 * size:
            return f"{ms // size}{unit}"
    return f"{ms}ms" if ms else "0"


# ---- kinds: how a value is read and checked, and how the reference describes it --------------------------------

@dataclass(frozen=True)
class Text:
    """Free text (stripped; empty means not set). ``form`` says what it holds, for the reference."""

    form: str = "text"

    def read(self, opts: Options, option: Option) -> Any:
        return opts.string(option.name, option.default)

    def describe(self) -> str:
        return self.form


@dataclass(frozen=True)
class Flag:
    """``true`` or ``false``."""

    def read(self, opts: Options, option: Option) -> Any:
        return opts.boolean(option.name, option.default)

    def describe(self) -> str:
        return "`true` or `false`"

    @staticmethod
    def show(value: Any) -> str:
        return str(value).lower()


@dataclass(frozen=True)
class Count:
    """A whole number, at least ``minimum``."""

    minimum: int | None = None

    def read(self, opts: Options, option: Option) -> Any:
        return opts.integer(option.name, option.default, minimum=self.minimum)

    def describe(self) -> str:
        return "whole number" + ("" if self.minimum is None else f" >= {self.minimum}")


@dataclass(frozen=True)
class Duration:
    """A duration with its unit (``500ms``, ``10s``, ``5m``, ``12h``, ``1d``), read as ms.

    A bare number is refused (``0`` aside, the same in every unit) unless the option's name carries its unit
    (``kafkaConsumer.pollTimeoutMs``): Samza reads one as milliseconds, but a user writing ``startpoint.ttl=3600``
    meant an hour, and 3.6 s would pass silently."""

    minimum_ms: int = 0

    def read(self, opts: Options, option: Option) -> Any:
        value = opts.raw(option.name)
        if value is not None and _is_bare_number(value) and not _name_carries_unit(option.name):
            number = value.strip()
            raise ConfigError(
                f"option '{option.name}' = {value!r} has no unit: write it with one, e.g. '{number}s' for seconds "
                f"or '{number}ms' for milliseconds ({_spelled_out(number)}); units: ms, s, m, h, d")
        return opts.duration_ms(option.name, option.default, minimum_ms=self.minimum_ms)

    def describe(self) -> str:
        return "duration" + (f" >= {format_duration(self.minimum_ms)}" if self.minimum_ms > 1 else "")

    @staticmethod
    def show(value: Any) -> str:
        return format_duration(value)


_ASCII_DIGITS = re.compile(r"[0-9]+")


def _is_bare_number(value: str) -> bool:
    """ASCII digits only (``str.isdigit`` would take '²'), and not zero; no ``int()``: 5,000 digits would raise."""
    text = value.strip()
    return bool(_ASCII_DIGITS.fullmatch(text)) and text.strip("0") != ""


def _name_carries_unit(name: str) -> bool:
    return name.endswith(("Ms", "Sec", "Seconds"))


def _spelled_out(text: str) -> str:
    """The whole-unit reading of ``text`` seconds, to help choose: 3600 -> '1h'."""
    if len(text) > 15:
        return "that is more than 30 million years in seconds"
    number = int(text)
    for unit_s, unit in ((86_400, "d"), (3_600, "h"), (60, "m")):
        if number % unit_s == 0:
            return f"{number} seconds is '{number // unit_s}{unit}'"
    return f"{number} seconds is '{number}s'"


@dataclass(frozen=True)
class OneOf:
    """One of ``allowed`` (case-insensitive; read in the spelling given here)."""

    allowed: tuple[str, ...]

    def read(self, opts: Options, option: Option) -> Any:
        return opts.choice(option.name, option.default, self.allowed)

    def describe(self) -> str:
        return " or ".join(f"`{choice}`" for choice in self.allowed)


Kind = Text | Flag | Count | Duration | OneOf


@dataclass(frozen=True)
class Option:
    """One option. ``default`` is the value used when it is not set (None: no value); ``default_doc`` says it in
    words where the value alone would mislead (``required``, "``endpointUrl``'s value"). ``aliases`` are other
    names accepted for it (the AWS connector's); ``deprecated`` are its former names, still accepted with a warning
    that names the new one; ``bounded_only`` options are for ``spark.read`` and refused by a streaming query."""

    name: str
    kind: Kind
    description: str
    default: Any = None
    default_doc: str | None = None
    aliases: tuple[str, ...] = ()
    bounded_only: bool = False
    deprecated: tuple[str, ...] = ()

    def read(self, opts: Options) -> Any:
        """The value given for this option, checked and typed, or its default; ConfigError naming it otherwise.

        A value given under a former name (``deprecated``) is read as this option's, with a warning; an error in
        it names the name the user wrote. Both names at once is an error: which one was meant cannot be told."""
        former = [name for name in self.deprecated if opts.has(name)]
        if not former:
            return self.kind.read(opts, self)
        if opts.has(self.name):
            raise ConfigError(f"options '{former[0]}' and '{self.name}' are the same option ('{former[0]}' is its "
                              f"former name); give only '{self.name}'")
        _warn_deprecated(former[0], self.name)
        return self.kind.read(opts, dataclasses.replace(self, name=former[0]))

    def with_aliases(self, *aliases: str) -> Option:
        """This option accepted under more names (a system adds its connector's names to a common option)."""
        return dataclasses.replace(self, aliases=(*self.aliases, *aliases))

    @property
    def secret(self) -> bool:
        return is_secret_option(self.name)

    def default_text(self) -> str:
        """The default as the reference shows it."""
        if self.default_doc is not None:
            return self.default_doc
        if self.default is None:
            return "none"
        show = getattr(self.kind, "show", str)
        return f"`{show(self.default)}`"


@dataclass(frozen=True)
class Namespace:
    """An open namespace: every name under ``prefix`` is accepted, and its owner checks them (``kafka.`` goes to
    librdkafka, which knows its properties; ``testing.`` belongs to the fault hooks)."""

    prefix: str
    description: str


@dataclass(frozen=True)
class OptionNames:
    """What one source accepts: its known names, open namespaces and the names it refuses with a reason.

    ``refused`` maps a name (documented spelling) to why it is refused and what to use instead; a refused name
    wins over a known one. ``source`` names the source in messages (``samza-kafka``)."""

    source: str
    known: tuple[str, ...]
    prefixes: tuple[str, ...] = ()
    refused: Mapping[str, str] = field(default_factory=dict)

    def spelling(self, lowered: str) -> str:
        """The documented spelling of a known or refused name given lower-cased (as Spark hands it over)."""
        for name in (*self.known, *self.refused):
            if name.lower() == lowered:
                return name
        return lowered

    def suggestions(self, given: str) -> list[str]:
        """The known names closest to ``given`` (case-insensitively), closest first."""
        lowered = {name.lower(): name for name in self.known if name not in self.refused}
        lowered.update({prefix.lower(): prefix + "..." for prefix in self.prefixes})
        close = difflib.get_close_matches(given.lower(), list(lowered), n=_SUGGESTIONS, cutoff=_CUTOFF)
        return [lowered[name] for name in close]


def check_option_names(given: Iterable[str], names: OptionNames) -> None:
    """Raise :class:`ConfigError` for the first refused or unknown option in ``given`` (in sorted order, so the
    error is the same whatever order the options came in)."""
    known = {name.lower() for name in names.known}
    refused = {name.lower(): (name, why) for name, why in names.refused.items()}
    prefixes = tuple(prefix.lower() for prefix in names.prefixes)
    for name in sorted(str(n).lower() for n in given):
        if name in refused:
            spelled, why = refused[name]
            raise ConfigError(f"option '{spelled}' is not supported by {names.source}: {why}",
                              condition=UNSUPPORTED_OPTION)
        if name in known or name.startswith(prefixes):
            continue
        raise ConfigError(unknown_option_message(name, names), condition=UNKNOWN_OPTION)


def unknown_option_message(name: str, names: OptionNames) -> str:
    """"unknown option 'x'; did you mean 'y'?" and where the known names are listed."""
    close = names.suggestions(name)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close else
            "check its spelling against docs/options.md, which lists every option")
    return f"unknown option '{name}' for {names.source}: {hint} (option names are case-insensitive)"


@dataclass(frozen=True)
class OptionSpec:
    """Every option of one source: its entries, open namespaces, and the names it refuses with the reason and what
    to do instead (options Spark's or AWS's sources have that this one deliberately lacks)."""

    source: str
    options: tuple[Option, ...]
    namespaces: tuple[Namespace, ...] = ()
    refused: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for name in (n.lower() for option in self.options for n in (option.name, *option.aliases,
                                                                      *option.deprecated)):
            if name in seen:
                raise InternalError(f"{self.source}: option name {name!r} declared twice")
            seen.add(name)

    def names(self) -> OptionNames:
        """The names this source knows (aliases included), its namespaces and its refused names."""
        known = sorted({n for option in self.options for n in (option.name, *option.aliases, *option.deprecated)})
        return OptionNames(source=self.source, known=tuple(known),
                           prefixes=tuple(sorted(ns.prefix for ns in self.namespaces)), refused=dict(self.refused))

    def check_names(self, given: Iterable[str]) -> None:
        """The unknown-name check: ConfigError for a refused or unknown name, with the reason or "did you mean"."""
        check_option_names(given, self.names())

    def aliases(self) -> dict[str, str]:
        """Each alias -> the option's own name."""
        return {alias: option.name for option in self.options for alias in option.aliases}

    def bounded_only(self) -> tuple[str, ...]:
        return tuple(option.name for option in self.options if option.bounded_only)


_WARNED_DEPRECATED: set[tuple[str, str]] = set()


def _warn_deprecated(former: str, name: str) -> None:
    """Once per process and name: a query parses its options several times (load, the stream reader, spark.read)."""
    if (former, name) in _WARNED_DEPRECATED:
        return
    _WARNED_DEPRECATED.add((former, name))
    logging.getLogger(__name__).warning("option '%s' is deprecated: it is now '%s' (the old name is still accepted "
                                        "for now); use '%s'", former, name, name)
