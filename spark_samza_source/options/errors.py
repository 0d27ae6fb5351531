"""The two error classes the option spec raises, defined below everything else so the spec stays a leaf.

``core.errors`` re-exports both and defines every other error on top of :class:`SamzaSourceError`; callers import
them from there.
"""


class SamzaSourceError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(SamzaSourceError, ValueError):
    """An option or configuration value is missing or invalid."""
