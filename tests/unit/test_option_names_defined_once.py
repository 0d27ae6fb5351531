"""Every option name is a constant defined once (docs/architecture.md §2).

The names live in ``source/options.py`` (shared by both sources) and in ``kafka/options.py`` /
``kinesis/options.py`` (one system's own), as module-level ``*_OPTION = "..."`` constants. Every other product
module imports the constant, so a rename cannot miss a place. The test parses every module of
``spark_samza_source`` with ``ast`` and fails when an option name is written as a string literal in more than one
module (the defining module counts as one; docstrings do not count).

Messages, log lines and hints name options too, so a second test fails when a module other than the defining one
names an option inside a longer string constant (f-strings included: their literal parts, with ``{…}`` for each
placeholder) in one of the forms the code uses to name an option: quoted (``'name'``, ``"name"``, ```name```, so
also a ``.option('name', ...)`` example), set (``name=``), or after the word option(s) (``option name``,
``options a, b``). Names are matched as whole words, so ``tasks`` in "the tasks of" or ``region`` in "a region" do
not count. A name with a dot or an uppercase letter (``job.name``, ``maxRecordsPerShard``, ``kcl.leaseTable``) is no
ordinary word, so it counts bare as well, anywhere in the text ("start a new job.name", "(see maxRecordsPerShard)"),
as long as it is not part of a longer name: no letter, digit, ``_``, ``.`` or ``-`` right before it
(``kafka.metadata.store``), and no letter, digit or ``_`` (nor ``.`` and one of them) right after it
(``job.name.suffix``, ``startingOffsetsByTimestamp``); a sentence's full stop after it still counts. All-lowercase
names without a dot (``tasks``, ``region``, ``subscribe``, ``grouper``...) count only in the three forms above. Such
messages are written with the constant: ``f"option '{STARTING_OFFSETS_OPTION}' names ..."``, ``f"start a new
{JOB_NAME_OPTION}"``; a log line passes it as an argument (``"... (%s)", ..., EXPANSION_SETTLE_OPTION``).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import spark_samza_source

ROOT = Path(spark_samza_source.__file__).resolve().parent
DEFINING = ["source/options.py", "kafka/options.py", "kinesis/options.py"]

# The same word meaning something other than the option, where the test cannot tell them apart.
OTHER_MEANINGS = {
    ("tasks", "core/jobmodel.py"): "the job model's JSON field",
    ("tasks", "core/checkpoint.py"): "the checkpoint mirror's JSON field",
    ("tasks", "ops/lag.py"): "the job model's JSON field",
    ("tasks", "ops/cli/commands.py"): "the job model's JSON field",
    ("tasks", "kafka/offset.py"): "the job model's JSON field (left out of the offset when positions give it)",
    ("region", "metadata/dynamodb.py"): "a dynamodb:// URI parameter",
    ("region", "metadata/__init__.py"): "a dynamodb:// URI parameter",
    ("region", "metadata/s3.py"): "an s3:// URI parameter",
    ("region", "source/job_options.py"): "a dynamodb:// URI parameter",
    ("streamName", "kinesis/schema.py"): "the output column",
    ("streamName", "kinesis/lease_table.py"): "a KCL lease-table attribute",
}


def _modules() -> dict[str, ast.Module]:
    return {path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for path in sorted(ROOT.rglob("*.py"))}


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def option_names(modules: dict[str, ast.Module]) -> dict[str, str]:
    """Option name -> the module that defines it, from the ``*_OPTION = "..."`` constants."""
    names: dict[str, str] = {}
    for module in DEFINING:
        for node in modules[module].body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.endswith("_OPTION") and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                assert node.value.value not in names, f"{node.value.value!r} defined in {names.get(node.value.value)}"
                names[node.value.value] = module
    return names


def literal_uses(modules: dict[str, ast.Module], names: set[str]) -> dict[str, dict[str, list[int]]]:
    """Option name -> module -> lines where the name is a whole string literal (outside docstrings)."""
    uses: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for module, tree in modules.items():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
                    and id(node) not in docs and (node.value, module) not in OTHER_MEANINGS):
                uses[node.value][module].append(node.lineno)
    return uses


# The forms in which a message names an option (see the module docstring). A name is a whole word: no letter, digit,
# '_', '.' or '-' right before it, and no letter, digit or '_' (nor '.' and one of them) right after it.
_BEFORE, _AFTER = r"(?<![\w.-])", r"(?![\w]|\.\w)"
_QUOTES = "'\"`"


def distinctive(name: str) -> bool:
    """A name no English prose uses: it has a dot or an uppercase letter (``job.name``, ``maxRecordsPerShard``)."""
    return "." in name or name != name.lower()


def _naming(name: str) -> re.Pattern[str]:
    n = re.escape(name)
    if distinctive(name):
        return re.compile(rf"{_BEFORE}{n}{_AFTER}")  # bare: "start a new job.name", "(see maxRecordsPerShard)"
    return re.compile(
        rf"[{_QUOTES}]{n}[{_QUOTES}]"  # 'name', "name", `name`, .option('name', ...)
        rf"|{_BEFORE}{n}\s?=(?!=)"  # name=value
        rf"|\b[Oo]ptions?\s+(?:[\w.]+(?:,\s*|\s*/\s*))*{n}{_AFTER}"  # option name, options a, name, option a / name
    )


def _texts(tree: ast.Module):
    """(line, text) of every string constant outside docstrings; an f-string is one text, ``{…}`` per placeholder."""
    docs = _docstrings(tree)
    parts = {id(value) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for value in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
              and id(node) not in parts):
            yield node.lineno, node.value


def named_in_text(modules: dict[str, ast.Module], names: dict[str, str]) -> list[tuple[str, int, str, str]]:
    """(module, line, option name, text) where a longer string names an option defined in another module."""
    patterns = {name: _naming(name) for name in names}
    found = []
    for module, tree in modules.items():
        for line, text in _texts(tree):
            for name, pattern in patterns.items():
                if (text != name and names[name] != module and (name, module) not in OTHER_MEANINGS
                        and pattern.search(text)):
                    found.append((module, line, name, text))
    return sorted(found)


def test_the_shared_and_system_option_names_are_found():
    # Guards the test below against passing vacuously if the constants move or are renamed.
    modules = _modules()
    names = option_names(modules)
    assert [module for _, module in OTHER_MEANINGS if module not in modules] == []  # exceptions name real modules
    for name in ("job.name", "metadata.store", "startpoint.ttl", "startpoint.pollInterval", "job.ownership.ttl",
                 "failOnDataLoss", "endpoint.retryTimeout", "grouper", "task.broadcast.inputs"):
        assert names.get(name) == "source/options.py", name
    assert names.get("maxOffsetsPerTrigger") == "kafka/options.py"
    assert names.get("maxFetchTimePerShard") == "kinesis/options.py"


def test_no_option_name_is_a_literal_in_two_product_modules():
    modules = _modules()
    uses = literal_uses(modules, set(option_names(modules)))
    repeated = [f"{name!r}: " + ", ".join(f"{module}:{lines}" for module, lines in sorted(where.items()))
                for name, where in sorted(uses.items()) if len(where) > 1]
    assert repeated == [], "option names written as literals in several modules (import the constant):\n" + \
        "\n".join(repeated)


def test_the_naming_forms_are_recognised():
    # Guards the test below: each form the code uses is caught, and prose using the same word is not.
    tasks, store, region = _naming("tasks"), _naming("metadata.store"), _naming("region")
    for text in ("set 'tasks' to 4", 'the option "tasks"', "tasks=4", "(tasks=4, slots=2)", "option tasks",
                 "the options tasks, assignment", "the options assignment, tasks", "Options region / tasks",
                 ".option('tasks', '4')", "use `tasks` here"):
        assert tasks.search(text), text
    for text in ("the tasks of the job", "tasks == 4", "maxtasks=4", "option taskset", "the option tasks.x",
                 "a region", "no option: tasks", "options. tasks"):
        assert not tasks.search(text) and not region.search(text), text
    assert store.search("was 'metadata.store' changed") and store.search("set the option metadata.store;")
    assert not store.search("the metadata store lost them") and not store.search("kafka.metadata.store=x")
    planted = ast.parse("def f(x):\n    raise ValueError(f\"option 'startingOffsets' names {x}\")\n")
    assert named_in_text({"kafka/planted.py": planted}, {"startingOffsets": "kafka/options.py"}) == [
        ("kafka/planted.py", 2, "startingOffsets", "option 'startingOffsets' names {…}")]


def test_a_distinctive_name_is_recognised_bare():
    # A name with a dot or an uppercase letter counts anywhere as a whole name; an all-lowercase one only in a form.
    assert all(distinctive(n) for n in ("job.name", "maxRecordsPerShard", "kcl.leaseTable", "failOnDataLoss"))
    assert not any(distinctive(n) for n in ("tasks", "region", "subscribe", "assign", "grouper", "copartition"))
    job, per_shard, settle = _naming("job.name"), _naming("maxRecordsPerShard"), _naming("expansion.settleTime")
    for text in ("start a new job.name", "or start a new job.name.", "job.name {…} is not allowed",
                 "job.name '{…}' is already in use", "the same job.name and metadata.store", "samza-<job.name>",
                 "PREFIX/<job.name> in", "the job.name option", "job.name, job.id", "(job.name)", "'job.name'",
                 "job.name=x", "with the same job.name?", "job.name: x", "\njob.name"):
        assert job.search(text), text
    for text in ("kafka.job.name=x", "spark.job.name", "my_job.name", "job.name.suffix", "job.names", "job.name_2",
                 "job.name2", "the job name", "Job.name", "job-name", "JOB.NAME", "ajob.name", "x-job.name"):
        assert not job.search(text), text
    assert per_shard.search("(see maxRecordsPerShard, maxFetchTimePerShard)")
    assert settle.search("cut in %.1f s (expansion.settleTime)")
    for text in ("maxRecordsPerShards", "xmaxRecordsPerShard", "maxRecordsPerShard2", "expansion.settleTimeMs",
                 "kafka.expansion.settleTime"):
        assert not per_shard.search(text) and not settle.search(text), text
    assert not _naming("startingOffsets").search("startingOffsetsByTimestamp")
    assert not _naming("tasks").search("start 4 tasks") and not _naming("grouper").search("the grouper decides")
    planted = ast.parse("import logging\nlogging.warning('reads shards itself (see maxRecordsPerShard)')\n")
    assert named_in_text({"samza_config/planted.py": planted}, {"maxRecordsPerShard": "kinesis/options.py"}) == [
        ("samza_config/planted.py", 2, "maxRecordsPerShard", "reads shards itself (see maxRecordsPerShard)")]


def test_no_option_name_is_named_in_a_message_outside_its_defining_module():
    modules = _modules()
    names = option_names(modules)
    found = [f"{module}:{line}: option {name!r} (defined in {names[name]}) in {text!r}"
             for module, line, name, text in named_in_text(modules, names)]
    assert found == [], "option names written inside strings (write the message with the imported constant, e.g. " \
        "f\"option '{STARTING_OFFSETS_OPTION}' ...\"; or, for another meaning of the word, add it to OTHER_MEANINGS):" \
        "\n" + "\n".join(found)
