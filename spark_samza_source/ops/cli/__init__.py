"""``samza-source``: the operator tool for samza-kafka and samza-kinesis jobs.

::

    samza-source startpoint set    --store URI --job NAME (--topic T --partition P | --stream S --shard ID
                                   --checkpoint DIR | --stream S --slot N) [--task TASK]
                                   (--offset N | --sequence N | --timestamp TIME | --oldest | --upcoming)
    samza-source startpoint get    --store URI --job NAME <partition, shard or slot> [--task TASK]
    samza-source startpoint delete --store URI --job NAME <partition, shard or slot> [--task TASK]
    samza-source startpoint list   --store URI --job NAME
    samza-source jobmodel show     --store URI --job NAME [--checkpoint DIR]
    samza-source checkpoint show   --store URI --job NAME
    samza-source lag               --store URI --job NAME (--bootstrap HOST:PORT [-X KEY=VALUE ...]
                                   | --stream S [--region R] [--endpoint URL] [--checkpoint DIR] [--max-records N])

Every command takes ``--json`` (machine-readable output on stdout). Exit status: 0 ok; 1 failed (nothing
found, a store, broker or stream unreachable, lag not measurable for some partition); 2 bad usage (with a usage
message naming the flag). Warnings go to stderr. Credentials in the store URI (``s3://KEY:SECRET@...``,
``?secret_key=...``) and the values of ``-X`` properties are never printed: every line of output is scrubbed.
The store URI may also come from ``$SAMZA_METADATA_STORE`` so that it stays out of the process list.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Sequence

from ...core.errors import SamzaSourceError
from ...metadata import scrub_secrets
from ...options.secrets import secret_values
from .errors import UsageError
from .parser import build_parser, json_errors, json_requested, validate

__all__ = ["main"]

log = logging.getLogger("spark_samza_source.ops.cli")


class _Scrubber:
    """Removes credentials from any text: those of the URIs given (store, checkpoint location, endpoint) and the
    secrets of the ``-X`` properties (``options/secrets.py`` says which are secret)."""

    def __init__(self, uris: Sequence[str | None], properties: Sequence[tuple[str, str]] = ()) -> None:
        self.uris = [u for u in uris if isinstance(u, str) and u]
        self.secrets = secret_values(properties)

    def __call__(self, text: str) -> str:
        text = str(text)
        for uri in self.uris:
            text = scrub_secrets(text, uri, limit=len(text) + 1)
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def _emit(text: str, stream) -> None:
    if text:
        print(text, file=stream)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (the console script passes it to ``sys.exit``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    token = json_errors.set(json_requested(argv))
    try:
        return _main(argv)
    except BrokenPipeError:  # stdout closed early (``| head``): stop quietly, as other command-line tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        json_errors.reset(token)


def _main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2), already printed by argparse
        return int(done.code or 0)
    leaf = _leaf_parser(parser, args)
    as_json = bool(getattr(args, "json", False))
    scrub = _Scrubber([getattr(args, name, None) for name in ("store", "checkpoint", "endpoint")],
                      getattr(args, "kafka_properties", None) or [])
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="samza-source: %(levelname)s: %(message)s")

    from .commands import run
    from .errors import CommandError

    try:
        validate(args)
        outcome = run(args)
    except UsageError as err:
        try:
            leaf.error(scrub(str(err)))
        except SystemExit as done:
            return int(done.code or 2)
    except (CommandError, SamzaSourceError, OSError) as err:
        return _fail(scrub(str(err)), as_json)
    except Exception as err:  # noqa: BLE001 - a client library's error: report it, never a traceback with secrets
        return _fail(scrub(f"{type(err).__name__}: {err}"), as_json)

    for warning in outcome.warnings:
        _emit(scrub(f"samza-source: warning: {warning}"), sys.stderr)
    if as_json:
        data = dict(outcome.data)
        if outcome.warnings:
            data["warnings"] = list(outcome.warnings)
        data["exitCode"] = outcome.code
        _emit(scrub(json.dumps(data, indent=2, sort_keys=True, default=str)), sys.stdout)
    elif outcome.code == 0:
        _emit(scrub(outcome.text), sys.stdout)
    else:
        # a command that found nothing explains why on stderr; partial results still go to stdout
        if outcome.data.get("rows"):
            _emit(scrub(outcome.text), sys.stdout)
        else:
            _emit(scrub(f"samza-source: {outcome.text}"), sys.stderr)
    return outcome.code


def _fail(message: str, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"error": message, "exitCode": 1}, sort_keys=True))
    print(f"samza-source: error: {message}", file=sys.stderr)
    return 1


def _leaf_parser(parser, args):
    """The subcommand's own parser, whose usage line a usage error should show."""
    import argparse

    node = parser
    for attr in ("group", "command"):
        name = getattr(args, attr, None)
        if name is None:
            break
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                node = action.choices[name]
                break
    return node
