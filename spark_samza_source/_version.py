"""The package version: the one place it is written (pyproject.toml reads it, ``samza-source --version`` prints it)."""

__version__ = "0.1.0.dev0"
