"""The ``samza-source`` command line: argparse definitions and the checks argparse cannot express.

Every usage problem exits with status 2 and a usage message naming the flag at fault: argparse's own errors
(unknown flag, missing required flag, bad value) and ours (:func:`validate`), which go through the subcommand's
``parser.error``. With ``--json`` the error is also written to stdout as ``{"error": ..., "exitCode": 2}``.
"""

from __future__ import annotations

import argparse
import contextvars
import json
import os
import sys
from datetime import datetime
from typing import NoReturn

from ..._version import __version__
from ...options.common import JOB_NAME, METADATA_STORE
from . import errors

__all__ = [
    "STORE_ENV",
    "build_parser",
    "parse_timestamp",
    "validate",
]

PROG = "samza-source"
#: the metadata store URI may come from the environment: a URI with credentials then stays out of ``ps``
STORE_ENV = "SAMZA_METADATA_STORE"

#: epoch values below this are almost certainly seconds, not milliseconds (1973-03-03 in ms)
_MIN_PLAUSIBLE_MS = 100_000_000_000
_MAX_MS = 2**63 - 1

#: set by ``main`` when ``--json`` is on the command line, so usage errors are also printed as JSON
json_errors: contextvars.ContextVar[bool] = contextvars.ContextVar("samza_source_json_errors", default=False)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        if json_errors.get():
            print(json.dumps({"error": f"{self.prog}: {message}", "exitCode": 2}, sort_keys=True))
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


# ---- value types ---------------------------------------------------------------------------------------------


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds from ``--timestamp``: digits (epoch ms) or ISO-8601 with a time zone.

    ``1700000000000``, ``2023-11-14T22:13:20Z``, ``2023-11-14T23:13:20.5+01:00`` and ``2023-11-14 22:13:20Z``
    are accepted. A time without a zone is refused rather than guessed (the driver, the operator and the
    brokers may all sit in different zones), and so is a number that looks like epoch *seconds*.
    """
    value = text.strip() if isinstance(text, str) else ""
    if not value:
        raise argparse.ArgumentTypeError("empty timestamp: give epoch milliseconds or ISO-8601 with a zone")
    if value.isascii() and value.isdigit():
        ms = int(value)
        if ms < _MIN_PLAUSIBLE_MS:
            raise argparse.ArgumentTypeError(
                f"{value} looks like epoch seconds (before 1973 as milliseconds); "
                f"give epoch milliseconds, e.g. {value}000"
            )
        if ms > _MAX_MS:
            raise argparse.ArgumentTypeError(f"{value} is larger than a Java long of milliseconds")
        return ms
    iso = value[:-1] + "+00:00" if value[-1:] in ("Z", "z") else value
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither epoch milliseconds nor an ISO-8601 time such as 2024-01-31T08:00:00Z"
        ) from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} has no time zone: append Z for UTC or an offset such as +01:00"
        )
    ms = round(moment.timestamp() * 1000)
    if ms < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is before 1970-01-01T00:00:00Z")
    return ms


def _non_negative_int(what: str):
    def convert(text: str) -> int:
        if not (isinstance(text, str) and text.strip().isascii() and text.strip().isdigit()):
            raise argparse.ArgumentTypeError(f"{what} must be a non-negative integer, got {text!r}")
        return int(text.strip())

    convert.__name__ = what  # argparse names the type in some messages
    return convert


def _positive_int(what: str):
    def convert(text: str) -> int:
        value = _non_negative_int(what)(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{what} must be a positive integer, got {text!r}")
        return value

    convert.__name__ = what
    return convert


def _position(text: str) -> str:
    """A Kafka offset or a Kinesis sequence number: a non-negative decimal integer, kept as text."""
    value = text.strip() if isinstance(text, str) else ""
    if not (value.isascii() and value.isdigit()):
        raise argparse.ArgumentTypeError(
            f"expected a non-negative decimal integer (Kafka offset or Kinesis sequence number), got {text!r}"
        )
    return value.lstrip("0") or "0"


def _kv(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("expected KEY=VALUE (a librdkafka property, e.g. security.protocol=SSL)")
    return key.strip(), value


def _non_empty(what: str):
    def convert(text: str) -> str:
        if not isinstance(text, str) or not text.strip():
            raise argparse.ArgumentTypeError(f"{what} must not be empty")
        return text.strip()

    convert.__name__ = what
    return convert


# ---- the parser ----------------------------------------------------------------------------------------------

_EPILOG = f"""\
exit status: 0 ok, 1 failed (e.g. nothing found, store or broker unreachable), 2 bad usage.
The metadata store URI may be given in ${STORE_ENV} instead of --store; credentials in it are never printed.
"""


def _common(sub: argparse.ArgumentParser) -> None:
    group = sub.add_argument_group("job")
    default_store = os.environ.get(STORE_ENV) or None
    group.add_argument("--store", metavar="URI", default=default_store, type=_non_empty("--store"),
                       help=f"the job's {METADATA_STORE.name} URI (default: ${STORE_ENV})")
    group.add_argument("--job", metavar="NAME", required=True, type=_non_empty("--job"),
                       help=f"the {JOB_NAME.name} option")
    sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                     help="print machine-readable JSON instead of text")


def _ssp_selector(sub: argparse.ArgumentParser, *, task_help: str) -> None:
    kafka = sub.add_argument_group("Kafka partition (system kafka)")
    kafka.add_argument("--topic", metavar="T", type=_non_empty("--topic"))
    kafka.add_argument("--partition", metavar="P", type=_non_negative_int("--partition"))
    kinesis = sub.add_argument_group("Kinesis shard or slot (system kinesis)")
    kinesis.add_argument("--stream", metavar="S", type=_non_empty("--stream"))
    kinesis.add_argument("--shard", metavar="ID", type=_non_empty("--shard"),
                         help="a shard id; needs --checkpoint to find the shard's slot in the job model")
    kinesis.add_argument("--slot", metavar="N", type=_non_negative_int("--slot"),
                         help="the SSP slot (partition of the slot SSP) directly")
    kinesis.add_argument("--checkpoint", metavar="DIR",
                         help="the query's checkpointLocation: its latest offset maps shards to slots")
    sub.add_argument("--task", metavar="TASK", type=_non_empty("--task"), help=task_help)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Operator tool for samza-kafka and samza-kinesis jobs: startpoints, job model, checkpoints, lag, "
                    "checks.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    groups = parser.add_subparsers(dest="group", metavar="COMMAND", required=True, parser_class=_Parser)
    _add_startpoint(groups)
    _add_jobmodel(groups)
    _add_checkpoint(groups)
    _add_lag(groups)
    _add_consumers(groups)
    _add_check(groups)
    return parser


def _add_check(groups) -> None:
    """``check``: every record of the job, damaged ones with the rule's verdict and repair."""
    ch = groups.add_parser(
        "check", help="read every record of the job in its store and report the damaged ones",
        description="Reads every record of the job (job model, startpoints, checkpoint mirror, job lease, Kinesis "
                    "shard tasks and batch ends) as the query reads it, and reports each damaged one with what the "
                    "query does about it (fail or skip) and the repair. Exits 1 when a query would stop on one.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(ch)


def _add_startpoint(groups) -> None:
    """``startpoint set|get|delete|list``."""
    sp = groups.add_parser("startpoint", help="set, get, delete or list startpoints (SEP-18)",
                           description="Startpoints re-position a running or checkpointed query at its next "
                                       "micro-batch; they are deleted once a batch that applied them commits.")
    sp_cmds = sp.add_subparsers(dest="command", metavar="ACTION", required=True, parser_class=_Parser)

    s_set = sp_cmds.add_parser("set", help="write a startpoint for one partition, shard or slot; --topic T alone: "
                                           "every partition of T in the job model, --stream S alone: every slot of S",
                               epilog=_EPILOG,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(s_set)
    _ssp_selector(s_set, task_help="write the SSP+task key (broadcast inputs); default: the SSP only, fanned out "
                                   "to every task holding it")
    kind = s_set.add_argument_group("where to start (exactly one)").add_mutually_exclusive_group(required=True)
    kind.add_argument("--offset", "--sequence", dest="specific", metavar="N", type=_position,
                      help="StartpointSpecific: a Kafka offset or a Kinesis sequence number")
    kind.add_argument("--timestamp", metavar="TIME", type=parse_timestamp,
                      help="StartpointTimestamp: epoch ms or ISO-8601 with a zone (2024-01-31T08:00:00Z)")
    kind.add_argument("--oldest", action="store_true", help="StartpointOldest: the oldest retained record")
    kind.add_argument("--upcoming", action="store_true", help="StartpointUpcoming: only records arriving from now")

    s_get = sp_cmds.add_parser("get", help="show the startpoints stored for one partition, shard or slot",
                               epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(s_get)
    _ssp_selector(s_get, task_help="only the SSP+task key of this task (default: the SSP key and every task key)")

    s_del = sp_cmds.add_parser("delete", help="delete the startpoints of one partition, shard or slot",
                               epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(s_del)
    _ssp_selector(s_del, task_help="only the SSP+task key of this task (default: the SSP key and every task key)")

    s_list = sp_cmds.add_parser("list", help="list every stored startpoint of the job", epilog=_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(s_list)


def _add_jobmodel(groups) -> None:
    """``jobmodel show``."""
    jm = groups.add_parser("jobmodel", help="show the job model (tasks -> SSPs) and what changed")
    jm_cmds = jm.add_subparsers(dest="command", metavar="ACTION", required=True, parser_class=_Parser)
    jm_show = jm_cmds.add_parser(
        "show", help="tasks -> SSPs, initial partition counts and the changes since the previous job model",
        description="Reads the job model the samza-kafka driver mirrors into the metadata store (namespace "
                    "jobmodel), or, with --checkpoint, the one in the query's latest Spark offset (needed for "
                    "samza-kinesis, whose job model lives only in the offset).",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(jm_show)
    jm_show.add_argument("--checkpoint", metavar="DIR", help="read the job model from this checkpointLocation")


def _add_checkpoint(groups) -> None:
    """``checkpoint show``."""
    cp = groups.add_parser("checkpoint", help="show committed positions")
    cp_cmds = cp.add_subparsers(dest="command", metavar="ACTION", required=True, parser_class=_Parser)
    cp_show = cp_cmds.add_parser("show", help="the committed position of every (task, SSP), as mirrored at commit",
                                 epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(cp_show)


def _add_lag(groups) -> None:
    """``lag``: Kafka and Kinesis flags side by side (the job's system decides which apply)."""
    lag = groups.add_parser(
        "lag", help="committed positions against the latest ones, per partition or shard",
        description="Kafka: the high watermark minus the committed offset (as the checkpoint mirror holds it), per "
                    "partition. Kinesis: the records between the committed position and the shard's tip, counted "
                    "with GetRecords (bounded by --max-records), and Kinesis' MillisBehindLatest.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(lag)
    kafka = lag.add_argument_group("Kafka")
    kafka.add_argument("--bootstrap", metavar="HOST:PORT", type=_non_empty("--bootstrap"),
                       help="bootstrap servers of the cluster")
    kafka.add_argument("-X", "--kafka-property", dest="kafka_properties", metavar="KEY=VALUE", action="append",
                       type=_kv, default=[],
                       help="extra librdkafka client property (repeatable); values are never printed")
    kafka.add_argument("--timeout", metavar="SECONDS", type=_positive_int("--timeout"), default=30,
                       help="give up on the cluster after this long (default 30)")
    kinesis = lag.add_argument_group("Kinesis (credentials from boto3's default chain)")
    kinesis.add_argument("--stream", metavar="S", type=_non_empty("--stream"))
    kinesis.add_argument("--region", metavar="R", type=_non_empty("--region"))
    kinesis.add_argument("--endpoint", metavar="URL", type=_non_empty("--endpoint"))
    kinesis.add_argument("--checkpoint", metavar="DIR",
                         help="the query's checkpointLocation: maps the committed slot positions to shards")
    kinesis.add_argument("--max-records", metavar="N", type=_positive_int("--max-records"), default=100_000,
                         help="stop counting a shard's backlog after N records (then reported as at least N)")


def _add_consumers(groups) -> None:
    """``consumers list|deregister``: the stream consumers (enhanced fan-out) a samza-kinesis job read through."""
    co = groups.add_parser(
        "consumers", help="list or deregister the Kinesis stream consumers (enhanced fan-out) of a job",
        description="A samza-kinesis query with consumerType=SubscribeToShard registers its stream consumer "
                    "(consumerName) and never deregisters it: AWS charges for it per shard-hour until it is "
                    "deregistered. The job's store remembers every consumer it read through.")
    co_cmds = co.add_subparsers(dest="command", metavar="ACTION", required=True, parser_class=_Parser)
    c_list = co_cmds.add_parser("list", help="the job's stream consumers and their status in Kinesis",
                                epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c_dereg = co_cmds.add_parser("deregister", help="deregister one of the job's stream consumers",
                                 epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    for sub in (c_list, c_dereg):
        _common(sub)
        kinesis = sub.add_argument_group("Kinesis (credentials from boto3's default chain)")
        kinesis.add_argument("--stream", metavar="S", type=_non_empty("--stream"),
                             help="only the consumers of this stream")
        kinesis.add_argument("--region", metavar="R", type=_non_empty("--region"))
        kinesis.add_argument("--endpoint", metavar="URL", type=_non_empty("--endpoint"))
    c_dereg.add_argument("--name", metavar="CONSUMER", required=True, type=_non_empty("--name"),
                         help="the consumer's name (the query's consumerName option)")


# ---- checks argparse cannot express --------------------------------------------------------------------------


def validate(args: argparse.Namespace) -> None:
    """Raise :class:`UsageError` (exit 2) for an argument combination that makes no sense."""
    if not args.store:
        raise errors.store_missing(STORE_ENV)
    if args.group == "startpoint" and args.command != "list":
        _validate_selector(args)
    if args.group == "lag":
        _validate_lag(args)


def _validate_selector(args: argparse.Namespace) -> None:
    kafka = args.topic is not None or args.partition is not None
    kinesis = args.stream is not None or args.shard is not None or args.slot is not None
    if kafka and kinesis:
        raise errors.kafka_and_kinesis_selected()
    if not kafka and not kinesis:
        raise errors.nothing_selected()
    whole = args.command == "set"  # set: --topic alone means every partition, --stream alone every slot
    if kafka:
        if args.topic is None:
            raise errors.partition_without_topic()
        if args.partition is None and not whole:
            raise errors.topic_without_partition()
        if args.partition is None:
            _validate_whole(args, "--topic needs --partition", "partition")
        if args.checkpoint is not None:
            raise errors.checkpoint_without_shard()
        return
    if args.stream is None:
        raise errors.shard_or_slot_without_stream()
    if args.shard is not None and args.slot is not None or args.shard is None and args.slot is None and not whole:
        raise errors.stream_needs_shard_or_slot()
    if args.shard is None and args.slot is None:
        _validate_whole(args, "--stream needs --shard ID or --slot N", "slot")
        if args.checkpoint is None:
            raise errors.every_slot_needs_checkpoint()
        return
    if args.shard is not None and args.checkpoint is None:
        raise errors.shard_needs_checkpoint()


def _validate_whole(args: argparse.Namespace, needs: str, each: str) -> None:
    """``startpoint set`` for every partition of a topic or every slot of a stream: a position all of them share."""
    if args.specific is not None:
        raise errors.every_with_one_position(needs, each)
    if args.task is not None:
        raise errors.every_with_task(needs, each)


def _validate_lag(args: argparse.Namespace) -> None:
    if (args.bootstrap is None) == (args.stream is None):
        raise errors.lag_system_unclear()
    if args.bootstrap is not None:
        for flag, value in (("--region", args.region), ("--endpoint", args.endpoint),
                            ("--checkpoint", args.checkpoint)):
            if value is not None:
                raise errors.kinesis_flag_with_bootstrap(flag)
    elif args.kafka_properties:
        raise errors.kafka_property_with_stream()


def json_requested(argv: list[str]) -> bool:
    return any(a == "--json" for a in argv)
