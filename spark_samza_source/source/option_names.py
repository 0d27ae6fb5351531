"""Which option names a source knows, and the check that refuses every other one at option parsing.

A typo such as ``maxOffsetPerTrigger`` (one letter short) or ``startingOffset`` would otherwise be accepted without
a word and the query would run with defaults the user did not choose. So each system's ``parse`` first calls
:func:`check_option_names`, which sorts every given option into one of:

- **known**: a ``*_OPTION`` constant of ``source/options.py`` or of the system's ``options.py``. The names are
  collected from the modules themselves (:func:`option_constants`), so an option another change adds there is
  known without touching this module; batch-only names (``endingOffsets``) are known too, the stream reader
  refuses them itself;
- **open namespace**: a name under a ``*_OPTIONS_PREFIX`` constant (``testing.`` for the fault hooks, ``kafka.``
  for librdkafka). The namespace's owner checks those names (the fault hooks need ``testing.faultHooks``;
  ``kafka/options.py`` asks librdkafka);
- **refused with a reason**: options Spark's or AWS's sources have that this one deliberately lacks
  (``minPartitions``: a Spark input partition is one Samza task): the error says why and what to do instead;
- **unknown**: an error naming it and the closest known names ("did you mean 'maxOffsetsPerTrigger'?").

Spark hands a Python data source its options with lower-cased names (a case-insensitive dict), so names are compared
lower-cased and shown in their documented spelling. A pure module: it imports only ``core.errors``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

from ..core.errors import ConfigError

__all__ = ["OptionNames", "check_option_names", "option_constants", "option_prefixes"]

#: how many close names an error suggests, and how close (difflib's ratio) a name must be to be suggested
_SUGGESTIONS = 3
_CUTOFF = 0.6


def option_constants(*modules: ModuleType) -> tuple[str, ...]:
    """Every ``*_OPTION`` string constant of ``modules``: the option names they define."""
    return tuple(sorted({value for module in modules for name, value in vars(module).items()
                         if name.endswith("_OPTION") and isinstance(value, str)}))


def option_prefixes(*modules: ModuleType) -> tuple[str, ...]:
    """Every ``*_OPTIONS_PREFIX`` string constant of ``modules``: the open namespaces (``testing.``, ``kafka.``)."""
    return tuple(sorted({value for module in modules for name, value in vars(module).items()
                         if name.endswith("_OPTIONS_PREFIX") and isinstance(value, str)}))


@dataclass(frozen=True)
class OptionNames:
    """What one source accepts: its known names, open namespaces and the names it refuses with a reason.

    ``refused`` maps a name (documented spelling) to why it is refused and what to use instead; a refused name
    wins over a known one, so a name may be a constant (to be named in messages) and still be refused.
    ``source`` names the source in messages (``samza-kafka``)."""

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
            raise ConfigError(f"option '{spelled}' is not supported by {names.source}: {why}")
        if name in known or name.startswith(prefixes):
            continue
        raise ConfigError(unknown_option_message(name, names))


def unknown_option_message(name: str, names: OptionNames) -> str:
    """"unknown option 'x'; did you mean 'y'?" and where the known names are listed."""
    close = names.suggestions(name)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close else
            "check its spelling against the option list in the README")
    return f"unknown option '{name}' for {names.source}: {hint} (option names are case-insensitive)"
