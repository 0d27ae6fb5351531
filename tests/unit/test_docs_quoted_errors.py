"""The "did you mean" errors the README and docs/ quote are what the sources print for that typo, word for word
(the quote may stop early, never differ): a page showing users a message they will not see sends them looking for
the wrong thing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_samza_source.kafka.options import KAFKA
from spark_samza_source.kinesis.options import KINESIS

ROOT = Path(__file__).resolve().parents[2]
SPECS = {"samza-kafka": KAFKA, "samza-kinesis": KINESIS}
QUOTE = re.compile(r"unknown option '(?P<name>[^']+)' for (?P<source>samza-\w+): did you mean [^`\"]*")


def quotes() -> list[tuple[str, str, str, str]]:
    """(page, source, typo, quoted text) of every quoted unknown-option error, line breaks read as spaces."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        found += [(page.name, m["source"], m["name"], m.group(0).rstrip()) for m in QUOTE.finditer(text)]
    return found


def printed(source: str, typo: str) -> str:
    try:
        SPECS[source].check_names({typo: "1"})
    except Exception as err:  # noqa: BLE001: the message is what is compared
        return str(err)
    raise AssertionError(f"{source} accepted {typo!r}")


def test_the_pages_quote_some_errors():
    assert len(quotes()) >= 3


@pytest.mark.parametrize("page, source, typo, quoted", quotes(), ids=lambda v: str(v)[:40])
def test_a_quoted_error_is_what_the_source_prints(page, source, typo, quoted):
    message = printed(source, typo)
    assert quoted in message, f"{page} quotes {quoted!r}; {source} prints {message!r}"
