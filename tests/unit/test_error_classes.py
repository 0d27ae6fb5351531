"""Errors are where one looks for them (docs/architecture.md §2): every exception class the package defines is in a
module named ``errors.py``, its name ends in ``Error``, and it is either a user's error (a :class:`SamzaSourceError`:
the message says what to fix) or a bug (an :class:`InternalError`), never both.

Private exceptions (a leading underscore) are control flow inside one module and never escape it; they are exempt.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import spark_samza_source
from spark_samza_source.core.errors import InternalError, SamzaSourceError

# optional extras a module may need at import time; a module that cannot be imported without them is skipped by name
OPTIONAL = {"spark_samza_source.ops.prometheus"}


def _modules() -> list[str]:
    names = [spark_samza_source.__name__]
    for info in pkgutil.walk_packages(spark_samza_source.__path__, spark_samza_source.__name__ + "."):
        names.append(info.name)
    # __main__ runs the command line when imported
    return [name for name in names if not name.rpartition(".")[2].startswith(("_native", "__main__"))]


def exception_classes() -> list[type[BaseException]]:
    found = {}
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ImportError:
            if name in OPTIONAL:
                continue
            raise
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == name:
                found[f"{name}.{obj.__qualname__}"] = obj
    return [found[key] for key in sorted(found)]


PUBLIC = [cls for cls in exception_classes() if not cls.__name__.startswith("_")]


def _id(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_the_walk_finds_every_systems_errors():
    # Guards the tests below against passing vacuously.
    names = {cls.__name__ for cls in PUBLIC}
    assert {"SamzaSourceError", "ConfigError", "KafkaDataLossError", "KinesisPlanError", "ThrottledAtDeadlineError",
            "CommandError", "InternalError"} <= names
    assert len(PUBLIC) >= 30


@pytest.mark.parametrize("cls", PUBLIC, ids=_id)
def test_an_error_class_lives_in_an_errors_module_and_says_error(cls):
    assert cls.__module__.rpartition(".")[2] == "errors", f"{_id(cls)}: define it in its package's errors.py"
    assert cls.__name__.endswith("Error"), f"{_id(cls)}: name it ...Error"


@pytest.mark.parametrize("cls", PUBLIC, ids=_id)
def test_an_error_is_a_users_or_a_bug_never_both(cls):
    user, bug = issubclass(cls, SamzaSourceError), issubclass(cls, InternalError)
    assert user != bug, f"{_id(cls)}: derive from SamzaSourceError (the user can fix it) or InternalError (a bug)"


def test_a_plan_that_cannot_fit_its_offset_is_a_bug_not_a_users_error():
    from spark_samza_source.kinesis.errors import KinesisPlanError

    assert issubclass(KinesisPlanError, InternalError) and not issubclass(KinesisPlanError, SamzaSourceError)


def test_an_inconsistent_mapper_is_a_bug_and_a_malformed_position_a_kinesis_error():
    from spark_samza_source.kinesis.errors import KinesisSourceError, MapperError, PositionFormatError

    assert issubclass(MapperError, InternalError) and not issubclass(MapperError, SamzaSourceError)
    assert issubclass(PositionFormatError, KinesisSourceError)


def test_a_damaged_offset_that_asks_the_mapper_the_impossible_is_reported_as_damaged():
    # the mapper's own error is a bug; an offset that makes it raise is the offset's fault
    from spark_samza_source.core.errors import OffsetFormatError
    from spark_samza_source.kinesis.driver.offset import KinesisOffset

    damaged = {"batch": 1, "version": 2, "shards": {},
               "jobModel": {"generation": 1, "numTasks": 0, "slotsPerTask": 1, "stream": "s", "system": "kinesis"}}
    with pytest.raises(OffsetFormatError, match="num_tasks must be a positive int"):
        KinesisOffset.from_json(damaged)


@pytest.mark.parametrize("module", ["spark_samza_source.kinesis.input_partition",
                                    "spark_samza_source.kafka.input_partition", "spark_samza_source.source.partition",
                                    "spark_samza_source.kinesis.microbatch_ends"])
def test_the_invariants_of_what_the_driver_builds_raise_internal_errors_not_bare_value_errors(module):
    import ast

    path = importlib.import_module(module).__file__
    tree = ast.parse(open(path, encoding="utf-8").read())
    raised = [node.exc.func.id for node in ast.walk(tree) if isinstance(node, ast.Raise)
              and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name)]
    assert raised and "ValueError" not in raised
