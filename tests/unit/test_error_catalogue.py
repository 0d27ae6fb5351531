"""Every user's error comes from a catalogue (core/errors.py docstring): a function of an ``errors.py`` module builds
it, with a condition declared once, in one catalogue, and listed in docs/errors.md.

The walk reads the package's source (ast), so it sees every site, run or not: a call of a user's error class (a
:class:`SamzaSourceError` subclass) with a message, outside the catalogues, fails it. Option errors are the one
exception: the option spec (``options/``) and the per-source option readers raise ``ConfigError`` where they check a
value, and the class carries the condition ``SAMZA_INVALID_OPTION`` itself.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import spark_samza_source
from spark_samza_source.core.errors import SamzaSourceError

PACKAGE = Path(spark_samza_source.__file__).resolve().parent
DOCS = PACKAGE.parent / "docs" / "errors.md"
CONDITION = re.compile(r"^SAMZA_[A-Z0-9]+(?:_[A-Z0-9]+)*$")

# where ConfigError may be raised inline: the option spec and the option readers (their messages are the option's)
OPTION_MODULES = {"options/option.py", "options/values.py", "kafka/options.py", "kinesis/options.py"}


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _catalogues() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("errors.py"))


def _user_error_names() -> set[str]:
    """The names of the user's error classes the catalogues define (every error class lives in one:
    test_error_classes.py)."""
    names = set()
    for path in _catalogues():
        module = importlib.import_module("spark_samza_source." + _relative(path)[:-3].replace("/", "."))
        names |= {name for name, obj in vars(module).items()
                  if isinstance(obj, type) and issubclass(obj, SamzaSourceError)}
    return names


USER_ERRORS = _user_error_names()


def _sources() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path.name != "errors.py")


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def inline_user_errors(path: Path) -> list[str]:
    """``line: Class`` for each user's error built with a message in ``path`` (a catalogue's job)."""
    allowed_config = _relative(path) in OPTION_MODULES
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not (node.args or node.keywords):
            continue
        name = _called_name(node)
        if name in USER_ERRORS and not (name == "ConfigError" and allowed_config):
            found.append(f"{node.lineno}: {name}")
    return found


def declared_conditions() -> dict[str, list[str]]:
    """Each condition name -> the catalogues that declare it (a module-level ``NAME = "SAMZA_..."``)."""
    declared: dict[str, list[str]] = {}
    for path in _catalogues():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str) and CONDITION.match(node.value.value)):
                declared.setdefault(node.value.value, []).append(_relative(path))
    return declared


def documented_conditions() -> list[str]:
    """The conditions docs/errors.md's tables list, in the order they appear (a row starts with `` | `NAME` ``)."""
    return re.findall(r"^\| `(SAMZA_[A-Z0-9_]+)` \|", DOCS.read_text(encoding="utf-8"), flags=re.M)


def test_the_walk_sees_the_user_errors_and_the_conditions():
    # Guards the tests below against passing vacuously.
    assert {"KafkaSourceError", "KinesisSourceError", "OffsetFormatError", "ConfigError"} <= USER_ERRORS
    assert "InternalError" not in USER_ERRORS
    assert {"SAMZA_INVALID_OPTION", "SAMZA_KAFKA_DATA_LOSS"} <= set(declared_conditions())
    probe = ast.parse('raise errors.KafkaSourceError(f"x {y}")').body[0]
    assert isinstance(probe, ast.Raise) and isinstance(probe.exc, ast.Call)
    assert _called_name(probe.exc) == "KafkaSourceError"


@pytest.mark.parametrize("path", _sources(), ids=_relative)
def test_a_users_error_is_built_by_its_catalogue(path):
    assert not inline_user_errors(path), (
        f"{_relative(path)} builds user's errors inline; add a function to its errors.py that builds each, with a "
        f"condition, and raise what it returns: {inline_user_errors(path)}")


def test_each_condition_is_declared_in_one_catalogue_once():
    twice = {name: where for name, where in declared_conditions().items() if len(where) > 1}
    assert not twice


def test_each_condition_is_documented_once_and_the_docs_name_no_other():
    documented = documented_conditions()
    assert len(documented) == len(set(documented)), "a condition listed twice in docs/errors.md"
    assert set(documented) == set(declared_conditions()), (
        f"undocumented: {sorted(set(declared_conditions()) - set(documented))}; "
        f"documented but not declared: {sorted(set(documented) - set(declared_conditions()))}")


def test_a_users_error_from_a_catalogue_starts_with_its_condition_in_brackets():
    from spark_samza_source.core.errors import ConfigError

    error = SamzaSourceError("records are gone", condition="SAMZA_KAFKA_DATA_LOSS")
    assert str(error) == "[SAMZA_KAFKA_DATA_LOSS] records are gone"
    assert error.condition == "SAMZA_KAFKA_DATA_LOSS"
    assert str(ConfigError("option 'x' must be 1")) == "[SAMZA_INVALID_OPTION] option 'x' must be 1"


def test_a_users_error_keeps_one_bracket_and_its_condition_through_pickling():
    # executors' errors reach the driver pickled: the message must not gain a second prefix
    import pickle

    kafka_errors = importlib.import_module("spark_samza_source.kafka.errors")
    error = kafka_errors.KafkaSourceError("topic gone", condition="SAMZA_KAFKA_DATA_LOSS")
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == "[SAMZA_KAFKA_DATA_LOSS] topic gone" and again.condition == "SAMZA_KAFKA_DATA_LOSS"


def test_every_samza_name_any_page_quotes_is_one_the_code_has():
    """A condition (or environment variable) quoted in the README or any page of docs/ (troubleshooting's headings,
    security's tables) is one the code declares or reads: a renamed condition cannot leave a page pointing users at
    a name they will never see."""
    root = PACKAGE.parent
    declared = set(declared_conditions())
    code = "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in [
        *root.joinpath("spark_samza_source").rglob("*.py"), *root.joinpath("devkit").rglob("*.py"),
        *root.joinpath("benchmarks").glob("*.py"), *root.joinpath("tests").rglob("*.py"), root / "Makefile",
        root / "setup.py"])
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    named = {(page.name, name) for page in pages
             for name in re.findall(r"\b(SAMZA_[A-Z0-9_]+[A-Z0-9])\b", page.read_text(encoding="utf-8"))}
    unknown = sorted((page, name) for page, name in named
                     if name not in declared and not re.search(rf"\b{name}\b", code))
    assert len({name for _, name in named} & declared) > 50  # the walk sees the pages' conditions
    assert not unknown, f"pages name SAMZA_ names the code neither declares nor reads: {unknown}"
