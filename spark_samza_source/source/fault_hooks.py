"""The seam for test-only fault injection: executor paths report named events; a hook module acts on them.

Tests prove the recovery paths (a Python worker dying inside ``read()``, a Kinesis task failing after it recorded
its end) by making a run fail at a chosen point. The code that fails is not product code: it lives in a module the
option ``testing.faultHooks`` names by dotted path (the development kit has one). What the product keeps is this:

- :class:`FaultHookOptions`: every option under ``testing.``, parsed with each source's options and shipped with
  them to executors (a frozen, picklable mapping, empty unless a test set one);
- :func:`report`: an event and its details, handed to the hook module's ``on_event(event, options, **details)``;
- :func:`reporting_batches`: the batches a task hands Spark, with :data:`TASK_HANDED_BATCH` after each one and
  :data:`TASK_READ_DONE` at the end.

With no ``testing.*`` option both do nothing and import nothing: a normal run never loads a hook module. An
executor module (docs/architecture.md §2): it imports ``core.errors`` and the option names only.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import errors
from ..core.errors import InternalError
from ..options.common import FAULT_HOOKS, TESTING_OPTIONS_PREFIX

__all__ = [
    "NO_FAULT_HOOKS", "SHARD_END_RECORDED", "TASK_HANDED_BATCH", "TASK_READ_DONE", "FaultHookOptions", "report",
    "reporting_batches",
]

#: a task handed Spark a batch and Spark took it; details ``task``, ``batch_number`` (1, 2 ...) and the caller's
TASK_HANDED_BATCH = "task_handed_batch"
#: a task's batches ended without error; details ``task``, ``batches`` (how many) and the caller's
TASK_READ_DONE = "task_read_done"
#: a Kinesis task recorded (or found recorded) where a shard's read ends in this batch; details ``task``,
#: ``shard_id``, ``end`` (the recorded end, a ``ShardPosition``), ``records`` (rows this attempt handed Spark for
#: the shard)
SHARD_END_RECORDED = "shard_end_recorded"

_MODULE_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


@dataclass(frozen=True)
class FaultHookOptions(Mapping[str, str]):
    """The ``testing.*`` options as given (names lower-cased, as Spark hands them over; looked up in any case).

    Empty (false) in every normal run. Otherwise it holds ``testing.faultHooks``, the hook module's dotted path,
    and whatever else the hooks read."""

    pairs: tuple[tuple[str, str], ...] = ()

    def __getitem__(self, name: str) -> str:
        wanted = name.lower()
        for key, value in self.pairs:
            if key == wanted:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def module(self) -> str | None:
        """The hook module's dotted path (option ``testing.faultHooks``); None when no ``testing.*`` is set."""
        return self.get(FAULT_HOOKS.name)

    @classmethod
    def parse(cls, opts: Any) -> FaultHookOptions:
        """From a ``spark.options.Options``: the ``testing.*`` options, checked. A ``testing.*`` option without
        ``testing.faultHooks`` is refused (nothing would act on it), and so is a hook module that cannot be found."""
        given = {TESTING_OPTIONS_PREFIX + key: value for key, value in opts.prefixed(TESTING_OPTIONS_PREFIX).items()}
        if not given:
            return NO_FAULT_HOOKS
        hooks = cls(tuple(sorted(given.items())))
        module = (hooks.module or "").strip()
        if not module:
            others = ", ".join(f"'{name}'" for name in sorted(given) if name != FAULT_HOOKS.name.lower())
            raise errors.invalid_option(
                f"option {others or repr(FAULT_HOOKS.name)} is a test-only fault-injection option and needs option "
                f"'{FAULT_HOOKS.name}': the dotted path of the module that implements the hooks (the development "
                f"kit's fault_hooks module). Set '{FAULT_HOOKS.name}' or remove every 'testing.*' option"
            )
        if not _MODULE_PATH.match(module) or _find_spec(module) is None:
            raise errors.invalid_option(
                f"option '{FAULT_HOOKS.name}' names {module!r}, which is not an importable module "
                "(a dotted module path with an on_event(event, options, **details) function)")
        return hooks


def _find_spec(module: str):
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


#: no ``testing.*`` option: no hook runs
NO_FAULT_HOOKS = FaultHookOptions()


def report(hooks: FaultHookOptions, event: str, **details: Any) -> None:
    """Tell the hook module that ``event`` happened (it may raise, or end the process). Nothing without hooks."""
    if not hooks:
        return
    if hooks.module is None:  # FaultHookOptions.parse refuses testing.* options without the module
        raise InternalError("fault-hook options without the hook module")
    module = importlib.import_module(hooks.module)
    on_event = getattr(module, "on_event", None)
    if on_event is None:
        raise errors.invalid_option(f"option '{FAULT_HOOKS.name}' names module {hooks.module!r}, which has no "
                                    "on_event(event, options, **details) function")
    on_event(event, hooks, **details)


def reporting_batches(hooks: FaultHookOptions, batches: Iterator, **details: Any) -> Iterator:
    """``batches`` itself without hooks; with hooks, the same batches, reporting :data:`TASK_HANDED_BATCH` after
    each one Spark took and :data:`TASK_READ_DONE` at the end (``details`` go with both; give ``task``)."""
    if not hooks:
        return batches
    return _reporting(hooks, batches, details)


def _reporting(hooks: FaultHookOptions, batches: Iterator, details: dict[str, Any]) -> Iterator:
    handed = 0
    for batch in batches:
        yield batch
        handed += 1
        report(hooks, TASK_HANDED_BATCH, batch_number=handed, **details)
    report(hooks, TASK_READ_DONE, batches=handed, **details)
