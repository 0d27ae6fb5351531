"""The longest test modules start first, so that pytest-xdist's workers finish together.

pytest-xdist (``--dist loadfile``) hands each worker whole test files in the order it holds them, and by default it
first sorts the files by their number of tests, most first. Here the files with the fewest tests are the longest (a
Spark standalone cluster module: 5 tests, 10 minutes), so they started last and the suite ended on one worker
running them while the others sat idle. ``make test`` turns that sort off (``--no-loadscope-reorder``) and this
orders the files by the wall seconds a recent run measured, longest first (the "longest processing time first" rule:
within about a third of the best packing): the short files fill in at the end.

The times live in ``tests/module_times.tsv`` (module, wall seconds), written by
``python -m samza_devkit.cpu_accounting --module-times REPORT`` from a ``--cpu-report`` of a whole run. A module the
file does not know (a new one) counts as :data:`UNKNOWN_MODULE_SECONDS`; the order only moves time, never changes
what runs, so stale figures cost minutes, not failures.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["UNKNOWN_MODULE_SECONDS", "longest_first", "read_module_times"]

UNKNOWN_MODULE_SECONDS = 30.0  # a new module, until the times are refreshed: about a median integration module


def read_module_times(path: Path) -> dict[str, float]:
    """Module path -> wall seconds from a ``module<TAB>seconds`` file; ``{}`` when there is none."""
    if not path.is_file():
        return {}
    times = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            module, seconds = line.split("\t")[:2]
            times[module] = float(seconds)
    return times


def longest_first(items: list, times: dict[str, float]) -> list:
    """``items`` (pytest items) grouped by module, the longest modules first; a module's own tests keep their order,
    and modules of equal time keep the order they were collected in."""
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ranked = sorted(modules, key=lambda module: -times.get(module, UNKNOWN_MODULE_SECONDS))
    return [item for module in ranked for item in modules[module]]
