"""The command-line tool's own errors: a command that cannot do its job (exit status 1) and a combination of
arguments that makes no sense (exit status 2, with usage). The product's errors are in ``core/errors.py`` and each
system's ``errors.py``."""

from __future__ import annotations

from ...core.errors import SamzaSourceError


class CommandError(SamzaSourceError):
    """The command could not do its job (exit status 1)."""


class UsageError(SamzaSourceError):
    """A combination of arguments that argparse accepted but that makes no sense; exits 2 with usage."""
