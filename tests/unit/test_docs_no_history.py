"""The product pages speak of the product, not of how it was built.

README.md, docs/*.md and benchmarks/README.md state what the package does and what it measures (a figure carries
its date, the machine and the command), never this repository's work history. Reported, as ``file:line``:

- our issue references: ``#`` and digits standing as a word of their own ("fixed in #46", "(#15)"), and "issue #"
  / "issues #". ``#`` after a letter or a digit (``PKCS#12``, ``kafka.config#0``) is not one, nor a Markdown
  link's target (``](architecture.md#8-the-kinesis-read-protocol)``). Another project's issue is cited by a
  link or as ``owner/repo#N``;
- commit hashes: a word of 7 to 40 hexadecimal characters holding a digit and a letter a-f (sequence numbers and
  offsets are digits only, shard IDs carry their ``shardId-`` prefix), outside fenced code blocks;
- "session" and a number (a work session, never Spark's), "development machine(s)", "before this rule", "the
  issue's", "other engineers".
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "benchmarks" / "README.md"]

LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
ISSUE_REF = re.compile(r"(?<![\w#/.-])#\d+\b")
ISSUE_WORD = re.compile(r"\bissues? #", re.I)
HEX_WORD = re.compile(r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])", re.I)
PHRASES = {
    "a work session": re.compile(r"\bsessions? \d", re.I),
    "the development machines": re.compile(r"\bdevelopment machines?\b", re.I),
    "'before this rule'": re.compile(r"\bbefore this rule\b", re.I),
    "'the issue's'": re.compile(r"\bthe issue's\b", re.I),
    "other engineers": re.compile(r"\bother engineers\b", re.I),
}
FENCE = re.compile(r"^\s*(```|~~~)")


def history_in(text: str, name: str) -> list[str]:
    """``name:line: what`` for every line of ``text`` that carries the repository's history."""
    found = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        where = f"{name}:{number}"
        prose = LINK_TARGET.sub("]()", line)
        if ISSUE_REF.search(prose) or ISSUE_WORD.search(prose):
            found.append(f"{where}: an issue reference: {line.strip()}")
        if not in_fence:
            for word in HEX_WORD.findall(line):
                found.append(f"{where}: a commit hash ({word}): {line.strip()}")
        for what, pattern in PHRASES.items():
            if pattern.search(line):
                found.append(f"{where}: {what}: {line.strip()}")
    return found


def test_the_product_pages_carry_no_history() -> None:
    found = [hit for page in PAGES for hit in history_in(page.read_text(), str(page.relative_to(REPO)))]
    assert not found, "history in the product pages (say what the product does, not how it got there):\n" + \
        "\n".join(found)


def test_every_product_page_is_read() -> None:
    assert all(page.is_file() for page in PAGES)
    assert len(PAGES) > 5


def test_planted_history_is_reported_with_its_line() -> None:
    planted = [
        "A clean first line about `maxOffsetsPerTrigger`.",
        "The stall was fixed in issue #46.",
        "Measured at commit ce01f04 of the branch.",
        "Figures of session 16, before the fix.",
        "The s3:// store's conditional writes (#15)",
        "Run of #17",
        "on this project's development machines",
        "a reshard query lost records before this rule",
        "the issue's targets",
        "the machine was shared with two other engineers' suites",
        "See issues #3 and #4.",
    ]
    found = history_in("\n".join(planted), "page.md")
    for number in range(2, len(planted) + 1):
        assert any(hit.startswith(f"page.md:{number}:") for hit in found), (planted[number - 1], found)
    assert not any(hit.startswith("page.md:1:") for hit in found), found
    assert any("ce01f04" in hit for hit in found)


def test_what_is_not_history_is_not_reported() -> None:
    clean = "\n".join([
        "Each query has a SparkSession; the session token expires; a Spark session per worker.",
        "PKCS#12 key stores, `kafka.config#0, kafka.config#[1-3]`, colour #a1b2c3.",
        "See [architecture §8](architecture.md#8-the-kinesis-read-protocol) and [the table](#12-figures).",
        "Sequence numbers 49590338271490256608559692538361571095921575989136588898, offset 1000000, 2026-11-29.",
        "`shardId-000000000001`, a UUID 123e4567-e89b-12d3-a456-426614174000, `0x7fffffff`, a word like deadbeef.",
        "Cited as apache/spark#12345 or [librdkafka#4321](https://github.com/confluentinc/librdkafka/issues/4321).",
        "```",
        "sha256 3f5a9c0e1b2d and commit-like ce01f04 inside a fenced block",
        "```",
        "Three sessions of Spark, each with its own session state.",
    ])
    assert history_in(clean, "clean.md") == []
