"""``python -m samza_devkit.kafka_broker --port 0 --data-dir DIR``

Prints exactly one line, ``listening on HOST:PORT``, once the broker accepts connections, then
serves until SIGTERM or SIGINT and exits 0; SIGUSR1 aborts the transactions past their timeout at once.
Logs go to stderr. Test and demo infrastructure only.

With ``--exit-on-stdin-eof`` each line written to stdin is a JSON control command (``BrokerServer.command``, e.g.
``{"op": "compact", "topic": "t"}``) answered by one JSON line on stdout: how ``KafkaDevBroker.compact`` reaches a
broker in a child process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading

from .sasl import SaslConfig
from .server import DEFAULT_MAX_FRAME_BYTES, BrokerServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m samza_devkit.kafka_broker",
                                     description="Kafka wire-protocol development broker (tests/demo only).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9092, help="0 picks a free port")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--fsync", action="store_true", help="fsync log and index before acknowledging")
    parser.add_argument("--auto-create-topics", action="store_true")
    parser.add_argument("--default-partitions", type=int, default=1)
    parser.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES)
    parser.add_argument("--log-level", default=os.environ.get("SAMZA_DEVBROKER_LOG_LEVEL", "WARNING"))
    parser.add_argument("--sasl-plain-user", action="append", default=[], metavar="USER:PASSWORD",
                        help="SASL_PLAINTEXT listener: accept this PLAIN user (repeatable)")
    parser.add_argument("--sasl-oauthbearer-secret", default=None, metavar="KEY",
                        help="SASL_PLAINTEXT listener: accept OAUTHBEARER tokens signed (HS256) with KEY")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="also stop when stdin closes (the parent process died); stdin lines are JSON control "
                             "commands, answered on stdout")
    parser.add_argument("--compaction-interval-s", type=float, default=None,
                        help="compact every compacted topic this often (default: only when asked)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s devbroker %(levelname)s %(message)s")
    return asyncio.run(_serve(args))


async def _serve(args) -> int:
    server = BrokerServer(args.data_dir, args.host, args.port, fsync=args.fsync,
                          auto_create_topics=args.auto_create_topics,
                          default_partitions=args.default_partitions, max_frame_bytes=args.max_frame_bytes,
                          sasl=SaslConfig(dict(u.split(":", 1) for u in args.sasl_plain_user),
                                          args.sasl_oauthbearer_secret),
                          compaction_interval_s=args.compaction_interval_s)
    await server.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # KafkaDevBroker.abort_timed_out_transactions: check the transaction timeouts now
    loop.add_signal_handler(signal.SIGUSR1, server.state.txns.abort_timed_out)
    if args.exit_on_stdin_eof:
        def watch_stdin() -> None:
            pending = b""
            try:
                while chunk := os.read(0, 4096):  # raw fd: no buffered-reader lock at shutdown
                    pending += chunk
                    while b"\n" in pending:
                        line, pending = pending.split(b"\n", 1)
                        if line.strip():
                            _answer_command(server, loop, line)
            except (OSError, ValueError):
                pass
            loop.call_soon_threadsafe(stop.set)

        threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"listening on {host}:{server.port}", flush=True)
    await stop.wait()
    await server.stop()
    return 0


def _answer_command(server: BrokerServer, loop: asyncio.AbstractEventLoop, line: bytes) -> None:
    """Run one stdin control command on the event loop and print its JSON answer as one stdout line."""
    try:
        command = json.loads(line)
        answer = asyncio.run_coroutine_threadsafe(server.command(command), loop).result()
    except Exception as exc:  # a malformed line gets an answer too: the parent is waiting for one
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    sys.exit(main())
