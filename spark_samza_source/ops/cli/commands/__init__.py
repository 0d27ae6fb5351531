"""What each ``samza-source`` command does, one module per command group (``startpoint``, ``jobmodel``,
``checkpoint``, ``lag``, ``consumers``, ``check``). Each returns an :class:`Outcome` (JSON data, text, exit status).

Nothing here prints: ``cli.main`` prints the outcome as text or ``--json`` and scrubs secrets from all of it.
Client libraries are imported only by the commands that need them (``lag`` imports confluent-kafka or boto3),
so ``startpoint`` and ``jobmodel`` start fast.
"""

from __future__ import annotations

import argparse

from .check import check
from .checkpoint import checkpoint_show
from .common import Outcome
from .consumers import consumers_deregister, consumers_list
from .jobmodel import jobmodel_show
from .lag import lag
from .startpoint import startpoint_delete, startpoint_get, startpoint_list, startpoint_set

__all__ = ["COMMANDS", "Outcome", "run"]


COMMANDS = {
    ("consumers", "list"): consumers_list,
    ("consumers", "deregister"): consumers_deregister,
    ("startpoint", "set"): startpoint_set,
    ("startpoint", "get"): startpoint_get,
    ("startpoint", "delete"): startpoint_delete,
    ("startpoint", "list"): startpoint_list,
    ("jobmodel", "show"): jobmodel_show,
    ("checkpoint", "show"): checkpoint_show,
    ("lag", None): lag,
    ("check", None): check,
}


def run(args: argparse.Namespace) -> Outcome:
    return COMMANDS[(args.group, getattr(args, "command", None))](args)
