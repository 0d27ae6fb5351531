"""The option reference, ``docs/options.md``, rendered from the specs (``kafka/options.py``, ``kinesis/options.py``):
every option of both sources once, with the names it is also accepted under, its default, the values it takes and
what it does. A tool over both systems' options, so it lives above them.

Regenerate after changing an entry (a unit test fails while the committed file differs)::

    python -m spark_samza_source.ops.options_reference > docs/options.md
"""

from __future__ import annotations

from collections.abc import Iterable

from ..kafka.options import KAFKA, REFUSED_CLIENT_SETTINGS
from ..kinesis.options import KINESIS
from ..options.option import Option, OptionSpec

__all__ = ["REGENERATE", "render"]

REGENERATE = "python -m spark_samza_source.ops.options_reference > docs/options.md"

_INTRO = f"""\
# Options

<!-- Generated from spark_samza_source/kafka/options.py and kinesis/options.py by `{REGENERATE}`: edit the entries
there, not this file. -->

Every option of `samza-kafka` and `samza-kinesis`, generated from the option spec
(`spark_samza_source/kafka/options.py`, `spark_samza_source/kinesis/options.py`, and `options/common.py` for what
both take).
Names are case-insensitive. Both sources check every name when the query is defined (`load()`): an unknown name
fails with the closest known ones ("did you mean"), and a refused one with the reason and what to use instead.
Durations are written with their unit: `500ms`, `10s`, `5m`, `12h` or `1d`; a bare number is refused (`0` aside)
unless the option's name carries its unit (`...Ms`). Values of secret options are never logged or shown in an error.
Samza's words (task, SSP, job model, grouper, startpoint) in Spark's terms: [glossary](glossary.md).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _aliases(option: Option, by_source: Iterable[tuple[str, Option]]) -> str:
    """The other names ``option`` is accepted under, with the source when only one of them accepts the name."""
    found: dict[str, list[str]] = {}
    sources = list(by_source)
    for source, variant in sources:
        for alias in variant.aliases:
            found.setdefault(alias, []).append(source)
    named = [f"`{alias}`" + ("" if len(where) == len(sources) else f" ({', '.join(where)})")
             for alias, where in found.items()]
    former = sorted({name for _, variant in sources for name in variant.deprecated})
    return ", ".join(named + [f"`{name}` (deprecated)" for name in former])


def _table(options: Iterable[Option], specs: tuple[OptionSpec, ...]) -> list[str]:
    lines = ["| option | also accepted as | default | value | meaning |", "|---|---|---|---|---|"]
    for option in options:
        variants = [(spec.source, o) for spec in specs for o in spec.options if o.name == option.name]
        meaning = option.description + (" (secret: never logged or shown)" if option.secret else "")
        lines.append(f"| `{option.name}` | {_cell(_aliases(option, variants))} | {_cell(option.default_text())} | "
                     f"{_cell(option.kind.describe())} | {_cell(meaning)} |")
    return lines


def _refused(refused: dict[str, str]) -> list[str]:
    lines = ["| option | why, and what to do instead |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(why)} |" for name, why in sorted(refused.items(), key=lambda kv: kv[0].lower())]
    return lines


def _section(spec: OptionSpec, shared: set[str], refused: dict[str, str], notes: str = "") -> list[str]:
    own = [o for o in spec.options if o.name not in shared]
    lines = [f"## {spec.source}", "", "### Streaming queries and batch reads", ""]
    lines += _table([o for o in own if not o.bounded_only], (spec,))
    if notes:
        lines += ["", notes.rstrip("\n")]
    lines += ["", "### Batch reads only (`spark.read`; a streaming query refuses them)", ""]
    lines += _table([o for o in own if o.bounded_only], (spec,))
    lines += ["", "### Open namespaces", "", "| prefix | what goes there |", "|---|---|"]
    lines += [f"| `{ns.prefix}*` | {_cell(ns.description)} |" for ns in spec.namespaces]
    lines += ["", f"### Refused by {spec.source}", ""]
    lines += _refused(refused)
    return lines + [""]


#: why samza-kafka's read-parallelism option has Spark's name, said under its table
_KAFKA_NOTES = """\
`minPartitions` has the name and the promise of Spark's Kafka source (at least this many Spark partitions per
micro-batch) with one difference: one partition's range is never cut across Spark tasks, since that would let two
Spark tasks read one key's records at once. A batch therefore gets `min(minPartitions, partitions with records)`
Spark partitions, and at least one per task; the job's tasks, the checkpoint and the `task` column are the same
with and without it, so it can be turned on or off at any restart. Adding partitions to a topic adds none by
itself: the job keeps its tasks. How parallelism is set and grows:
[guide](guide.md#parallelism-how-many-spark-tasks-read-and-how-it-grows).
"""


def render() -> str:
    """``docs/options.md``: the options both sources take, then each source's own, namespaces and refusals."""
    specs = (KAFKA, KINESIS)
    shared = {o.name for o in KAFKA.options} & {o.name for o in KINESIS.options}
    lines = [_INTRO, "## Both sources", ""]
    lines += _table([o for o in KAFKA.options if o.name in shared], specs)
    lines += [""]
    kafka_refused = {**KAFKA.refused, **{f"kafka.{name}": why for name, why in REFUSED_CLIENT_SETTINGS.items()}}
    lines += _section(KAFKA, shared, kafka_refused, _KAFKA_NOTES)
    lines += _section(KINESIS, shared, dict(KINESIS.refused))
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(render(), end="")
