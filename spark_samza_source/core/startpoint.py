"""Startpoints (SEP-18): where an SSP should start reading, written out of band and beating the checkpoint.

The five types and their JSON follow Samza's Jackson form exactly, so a startpoint written by a Samza tool reads
here and vice versa::

    {"@type":"StartpointSpecific","creationTimestamp":1700000000000,"specificOffset":"42"}
    {"@type":"StartpointTimestamp","creationTimestamp":1700000000000,"timestampOffset":1699990000000}
    {"@type":"StartpointOldest","creationTimestamp":1700000000000}
    {"@type":"StartpointUpcoming","creationTimestamp":1700000000000}

``@type`` is the class's simple name, as Jackson's ``@JsonTypeInfo(use=NAME)`` makes it. User types subclass
:class:`StartpointCustom` as frozen dataclasses; defining the class registers its simple name, and its dataclass
fields become JSON properties (``field(metadata={"json": "camelName"})`` renames one, to match a Java POJO).

Parsing is strict because startpoints come from outside the query (a CLI, a REST layer, another team's tool):
missing or extra properties, wrong JSON types, negative or out-of-``long`` timestamps and unknown ``@type`` all
raise :class:`StartpointFormatError` quoting the (truncated) offending JSON, never a bare ``KeyError``. Unknown
properties are refused rather than ignored because a misspelt ``specificOffset`` must not silently become a
different startpoint.

Resolution is a visitor (:class:`StartpointVisitor`) because each system supports a different subset: Kafka
resolves all four built-in types, Kinesis maps them to shard iterator types; anything a system does not
implement raises :class:`UnsupportedStartpointError` naming the type and the SSP, as Samza's default methods do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from . import errors
from .errors import StartpointFormatError
from .model import SystemStreamPartition

__all__ = [
    "Clock",
    "JAVA_LONG_MAX",
    "Startpoint",
    "StartpointCustom",
    "StartpointOldest",
    "StartpointSpecific",
    "StartpointTimestamp",
    "StartpointUpcoming",
    "StartpointVisitor",
    "current_time_ms",
    "startpoint_types",
    "truncate_json",
    "use_clock",
]

#: A clock returns epoch milliseconds. Injected in tests so creation timestamps and TTLs are deterministic.
Clock = Callable[[], int]

#: Samza stores timestamps in a Java ``long``; a larger value would not read back in a Samza tool.
JAVA_LONG_MAX = 2**63 - 1

_TRUNCATE = 300
R = TypeVar("R")


def _system_clock() -> int:
    return time.time_ns() // 1_000_000


_clock: Clock = _system_clock


def current_time_ms() -> int:
    """Epoch milliseconds from the active clock (the system clock unless :func:`use_clock` replaced it)."""
    return _clock()


@contextlib.contextmanager
def use_clock(clock: Clock) -> Iterator[None]:
    """Make new startpoints take their default ``creation_timestamp`` from ``clock`` (tests, replay tools).

    Code that builds startpoints can also pass ``creation_timestamp=`` explicitly; this hook exists for code
    that builds them indirectly (the CLI), so tests need not thread a clock through every layer.
    """
    global _clock
    previous, _clock = _clock, clock
    try:
        yield
    finally:
        _clock = previous


def truncate_json(value: Any, limit: int = _TRUNCATE) -> str:
    """Compact text of ``value`` for error messages, cut to ``limit`` characters (values may be huge)."""
    try:
        text = json.dumps(value, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...(truncated)"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_epoch_ms(value: Any, what: str, owner: str) -> int:
    if not _is_int(value) or not 0 <= value <= JAVA_LONG_MAX:
        raise errors.startpoint_invalid(
            f"{owner}: {what} must be a non-negative integer of epoch milliseconds (at most {JAVA_LONG_MAX}), "
            f"got {truncate_json(value)}"
        )
    return value


# ---- the model ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Startpoint:
    """Base of every startpoint: an immutable value with the epoch-ms time it was created.

    ``creation_timestamp`` decides precedence (the newest startpoint for an SSP and task wins), expiry (the
    manager's TTL) and safe deletion (a commit deletes only the startpoint it applied, identified by it).
    """

    creation_timestamp: int = field(default_factory=current_time_ms, kw_only=True)

    #: the visitor method that resolves this type
    _visit: ClassVar[str] = ""

    def __post_init__(self) -> None:
        if type(self) in (Startpoint, StartpointCustom):
            raise TypeError(f"{type(self).__name__} is abstract: use one of its subclasses")
        _check_epoch_ms(self.creation_timestamp, "creationTimestamp", type(self).__name__)

    @property
    def type_name(self) -> str:
        """The JSON ``@type``: the class's simple name, as Jackson writes it."""
        return type(self).__name__

    # ---- visitor -----------------------------------------------------------------------------------------
    def apply(self, ssp: SystemStreamPartition, visitor: StartpointVisitor[R]) -> R:
        """Resolve this startpoint for ``ssp`` with ``visitor``; returns what the visitor returns."""
        return getattr(visitor, self._visit)(ssp, self)

    # ---- JSON --------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Samza's JSON object, properties in Jackson's order: ``@type``, ``creationTimestamp``, the value."""
        _check_epoch_ms(self.creation_timestamp, "creationTimestamp", self.type_name)
        return {"@type": self.type_name, "creationTimestamp": self.creation_timestamp, **self._value_json()}

    def to_json_str(self) -> str:
        """Compact JSON text, byte-identical to what Samza's object mapper writes for the built-in types."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    @staticmethod
    def from_json(value: Any) -> Startpoint:
        """Parse a decoded JSON value; anything invalid raises :class:`StartpointFormatError`."""
        if not isinstance(value, Mapping):
            raise errors.startpoint_invalid(f"a startpoint must be a JSON object, got {truncate_json(value)}")
        type_name = value.get("@type")
        if not isinstance(type_name, str):
            raise errors.startpoint_invalid(
                f"startpoint JSON lacks a string '@type' (one of {', '.join(startpoint_types())}): "
                f"{truncate_json(value)}"
            )
        cls = startpoint_types().get(type_name)
        if cls is None:
            raise errors.startpoint_invalid(
                f"unknown startpoint @type {type_name!r:.100}: known types are {', '.join(startpoint_types())}; "
                "a StartpointCustom subclass must be imported in this process before its JSON is read: "
                f"{truncate_json(value)}"
            )
        if "creationTimestamp" not in value:
            raise errors.startpoint_invalid(f"{type_name} JSON lacks 'creationTimestamp': {truncate_json(value)}")
        created = _check_epoch_ms(value["creationTimestamp"], "creationTimestamp", type_name)
        rest = {k: v for k, v in value.items() if k not in ("@type", "creationTimestamp")}
        kwargs = cls._value_from_json(rest, value)
        try:
            return cls(**kwargs, creation_timestamp=created)
        except StartpointFormatError:
            raise
        except (TypeError, ValueError) as err:  # a user subclass's own validation
            raise errors.startpoint_invalid(f"{type_name} rejected {truncate_json(value)}: {err}") from None

    @staticmethod
    def from_json_str(text: str | bytes) -> Startpoint:
        """Parse JSON text; invalid JSON raises :class:`StartpointFormatError`."""
        try:
            value = json.loads(text)
        except (TypeError, ValueError, RecursionError) as err:
            raise errors.startpoint_invalid(
                f"startpoint is not valid JSON ({err}): {truncate_json(text if isinstance(text, str) else repr(text))}"
            ) from None
        return Startpoint.from_json(value)

    # ---- per-type hooks ----------------------------------------------------------------------------------
    def _value_json(self) -> dict[str, Any]:
        """The type's own properties (everything but ``@type`` and ``creationTimestamp``)."""
        return {}

    @classmethod
    def _value_from_json(cls, rest: Mapping[str, Any], whole: Any) -> dict[str, Any]:
        """Constructor keyword arguments from the type's own properties; strict about unknown ones."""
        _no_extra(cls.__name__, rest, set(), whole)
        return {}


def _no_extra(type_name: str, rest: Mapping[str, Any], allowed: set[str], whole: Any) -> None:
    extra = sorted(set(rest) - allowed)
    if extra:
        raise errors.startpoint_invalid(
            f"{type_name} JSON has unknown properties {extra!r:.200}"
            f" (allowed besides @type and creationTimestamp: {sorted(allowed)}): {truncate_json(whole)}"
        )


@dataclass(frozen=True)
class StartpointSpecific(Startpoint):
    """Start at a system-specific position: a Kafka offset as a decimal string, a Kinesis sequence number.

    A string (Samza's ``specificOffset``) so Kinesis sequence numbers, which exceed 64 bits, fit unchanged.
    """

    position: str
    _visit: ClassVar[str] = "visit_specific"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.position, str) or not self.position:
            raise errors.startpoint_invalid(
                f"StartpointSpecific: specificOffset must be a non-empty string (a Kafka offset is written as "
                f'a decimal string, e.g. "42"), got {truncate_json(self.position)}'
            )

    def _value_json(self) -> dict[str, Any]:
        return {"specificOffset": self.position}

    @classmethod
    def _value_from_json(cls, rest: Mapping[str, Any], whole: Any) -> dict[str, Any]:
        _no_extra(cls.__name__, rest, {"specificOffset"}, whole)
        if "specificOffset" not in rest:
            raise errors.startpoint_invalid(f"StartpointSpecific JSON lacks 'specificOffset': {truncate_json(whole)}")
        return {"position": rest["specificOffset"]}


@dataclass(frozen=True)
class StartpointTimestamp(Startpoint):
    """Start at the first record at or after ``timestamp_ms`` (epoch ms; Samza's ``timestampOffset``)."""

    timestamp_ms: int
    _visit: ClassVar[str] = "visit_timestamp"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_epoch_ms(self.timestamp_ms, "timestampOffset", "StartpointTimestamp")

    def _value_json(self) -> dict[str, Any]:
        return {"timestampOffset": self.timestamp_ms}

    @classmethod
    def _value_from_json(cls, rest: Mapping[str, Any], whole: Any) -> dict[str, Any]:
        _no_extra(cls.__name__, rest, {"timestampOffset"}, whole)
        if "timestampOffset" not in rest:
            raise errors.startpoint_invalid(f"StartpointTimestamp JSON lacks 'timestampOffset': {truncate_json(whole)}")
        return {"timestamp_ms": rest["timestampOffset"]}


@dataclass(frozen=True)
class StartpointOldest(Startpoint):
    """Start at the oldest retained record (Kafka low watermark, Kinesis TRIM_HORIZON)."""

    _visit: ClassVar[str] = "visit_oldest"


@dataclass(frozen=True)
class StartpointUpcoming(Startpoint):
    """Start after the newest record at resolution time (Kafka high watermark, Kinesis LATEST)."""

    _visit: ClassVar[str] = "visit_upcoming"


_BUILTIN: dict[str, type[Startpoint]] = {
    c.__name__: c for c in (StartpointSpecific, StartpointTimestamp, StartpointOldest, StartpointUpcoming)
}
_CUSTOM: dict[str, type[StartpointCustom]] = {}


@dataclass(frozen=True)
class StartpointCustom(Startpoint):
    """Base for system-specific startpoints; subclass it as a ``@dataclass(frozen=True)``.

    Defining a subclass registers it under its simple class name (its ``@type``), so the process that reads the
    JSON (the Spark driver) must import the module defining it. Fields must hold JSON values; fields annotated
    ``str``, ``int``, ``float`` or ``bool`` (optionally ``| None``) are type-checked on parsing, others are passed
    to the constructor, whose ``TypeError``/``ValueError`` become :class:`StartpointFormatError`.
    """

    _visit: ClassVar[str] = "visit_custom"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__name__
        if name in _BUILTIN:
            raise errors.startpoint_custom_type_invalid(
                f"a StartpointCustom subclass cannot be named {name}: that @type is built in")
        previous = _CUSTOM.get(name)
        # ``@dataclass(slots=True)`` and module reloads re-create a class with the same qualified name: replace it.
        if previous is not None and (previous.__module__, previous.__qualname__) != (cls.__module__, cls.__qualname__):
            raise errors.startpoint_custom_type_invalid(
                f"two StartpointCustom subclasses named {name}: {previous.__module__}.{previous.__qualname__} and "
                f"{cls.__module__}.{cls.__qualname__}; the JSON @type is the simple class name, so it must be unique"
            )
        _CUSTOM[name] = cls

    @classmethod
    def _json_fields(cls) -> list[tuple[str, str, dataclasses.Field[Any]]]:
        """(attribute, JSON name, field) for the subclass's own value fields."""
        own = [a for a in cls.__dict__.get("__annotations__", {}).values() if "ClassVar" not in str(a)]
        if own and "__dataclass_fields__" not in cls.__dict__:
            raise errors.startpoint_custom_type_invalid(
                f"{cls.__name__} declares fields but is not decorated with @dataclass(frozen=True)"
            )
        return [
            (f.name, f.metadata.get("json", f.name), f)
            for f in dataclasses.fields(cls)
            if f.init and f.name != "creation_timestamp"
        ]

    def _value_json(self) -> dict[str, Any]:
        out = {}
        for attr, name, _ in self._json_fields():
            value = getattr(self, attr)
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as err:
                raise errors.startpoint_invalid(
                    f"{self.type_name}.{attr} must hold a JSON value, got {value!r:.100} ({err})"
                ) from None
            out[name] = value
        return out

    @classmethod
    def _value_from_json(cls, rest: Mapping[str, Any], whole: Any) -> dict[str, Any]:
        fields = cls._json_fields()
        _no_extra(cls.__name__, rest, {name for _, name, _ in fields}, whole)
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # unresolvable annotations: fall back to the constructor's own checks
            hints = {}
        kwargs: dict[str, Any] = {}
        for attr, name, f in fields:
            if name not in rest:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise errors.startpoint_invalid(f"{cls.__name__} JSON lacks {name!r}: {truncate_json(whole)}")
                continue
            value = rest[name]
            hint = hints.get(attr)
            if not _matches_simple_hint(value, hint):
                expected = getattr(hint, "__name__", None) or str(hint)
                raise errors.startpoint_invalid(
                    f"{cls.__name__}.{name} must be {expected}, got {truncate_json(value)}: {truncate_json(whole)}"
                )
            kwargs[attr] = value
        return kwargs


_SIMPLE = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def _matches_simple_hint(value: Any, hint: Any) -> bool:
    """Check a JSON value against a plain scalar annotation; anything else is the constructor's business."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if any(o not in _SIMPLE and o is not type(None) for o in options):
        return True
    for option in options:
        if option is type(None):
            if value is None:
                return True
        elif isinstance(value, _SIMPLE[option]) and not (option is not bool and isinstance(value, bool)):
            return True
    return False


def startpoint_types() -> dict[str, type[Startpoint]]:
    """Every known ``@type``: the four built-in types, then registered custom types."""
    return {**_BUILTIN, **_CUSTOM}


# ---- the visitor -------------------------------------------------------------------------------------------


class StartpointVisitor(Generic[R]):
    """Resolves startpoints to a system's position; override the types your system supports.

    Each method receives the SSP and the startpoint and returns the resolved position (for Kafka the next
    offset to read). The defaults raise :class:`UnsupportedStartpointError` naming the type, the visitor and the SSP.
    """

    def _unsupported(self, ssp: SystemStreamPartition, startpoint: Startpoint) -> R:
        raise errors.startpoint_unsupported(startpoint.type_name, type(self).__name__, ssp,
                                            truncate_json(startpoint.to_json()))

    def visit_specific(self, ssp: SystemStreamPartition, startpoint: StartpointSpecific) -> R:
        return self._unsupported(ssp, startpoint)

    def visit_timestamp(self, ssp: SystemStreamPartition, startpoint: StartpointTimestamp) -> R:
        return self._unsupported(ssp, startpoint)

    def visit_oldest(self, ssp: SystemStreamPartition, startpoint: StartpointOldest) -> R:
        return self._unsupported(ssp, startpoint)

    def visit_upcoming(self, ssp: SystemStreamPartition, startpoint: StartpointUpcoming) -> R:
        return self._unsupported(ssp, startpoint)

    def visit_custom(self, ssp: SystemStreamPartition, startpoint: StartpointCustom) -> R:
        return self._unsupported(ssp, startpoint)
