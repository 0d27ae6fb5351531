"""The error classes the option spec raises, defined below everything else so the spec stays a leaf.

``core.errors`` re-exports them and defines every other error on top of :class:`SamzaSourceError`; callers import
them from there.

A user's error carries a *condition*: a stable UPPER_SNAKE name (``SAMZA_KAFKA_DATA_LOSS``), listed with what it
means and what to do in docs/errors.md, that a user can search for whatever the rest of the message says (Spark's
error classes, such as ``KAFKA_DATA_LOSS.START_OFFSET_RESET``, do the same). The message starts with it in brackets.
"""

from __future__ import annotations


class SamzaSourceError(Exception):
    """Base class of every error this package raises on purpose.

    ``condition`` is the error's stable name; a class may give a default (``ConfigError``), a catalogue function
    (each system's ``errors.py``) names it per error. The message is prefixed with it once: an error rebuilt from
    its message (unpickled on the driver from an executor) keeps the prefix it has and gets its ``condition`` back
    from the pickled attributes."""

    condition: str | None = None

    def __init__(self, *args: object, condition: str | None = None) -> None:
        condition = condition or type(self).condition
        if condition and args and isinstance(args[0], str) and not args[0].startswith(f"[{condition}]"):
            args = (f"[{condition}] {args[0]}", *args[1:])
        super().__init__(*args)
        self.condition = condition

    @property
    def detail(self) -> str:
        """The message without its condition's bracket, for an error that quotes this one inside its own."""
        text = str(self)
        prefix = f"[{self.condition}] "
        return text[len(prefix):] if self.condition and text.startswith(prefix) else text


# why the option spec's own errors are named here: it may import nothing above this leaf
INVALID_OPTION = "SAMZA_INVALID_OPTION"
UNKNOWN_OPTION = "SAMZA_UNKNOWN_OPTION"
UNSUPPORTED_OPTION = "SAMZA_UNSUPPORTED_OPTION"


class ConfigError(SamzaSourceError, ValueError):
    """An option or configuration value is missing or invalid."""

    condition = INVALID_OPTION


class InternalError(Exception):
    """A broken invariant inside this package: a bug to report, never the user's input or environment.

    Deliberately not a :class:`SamzaSourceError`, which marks the errors a user can meet and fix (the fuzz tests
    accept those and nothing else), so ``except SamzaSourceError`` never swallows a bug. Defined in this leaf so the
    option spec can raise it too; ``core.errors`` re-exports it."""
