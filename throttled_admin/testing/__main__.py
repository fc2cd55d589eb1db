"""Run the test broker standalone: ``python -m throttled_admin.testing --port 9092 --controller-mutation-rate 5``."""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
import threading

from throttled_admin._kafka.refusals import MAX_RECORDS_PER_USER_OP
from throttled_admin.testing import QuotaBroker


def _user(value: str) -> tuple[str, str]:
    name, sep, password = value.partition(":")
    if not sep or not name or not password:  # (Kafka's SASL logins refuse an empty password)
        raise argparse.ArgumentTypeError("expected NAME:PASSWORD, neither empty")  # never echo it: a password
    return name, password


def _setting(value: str) -> tuple[str, str]:
    name, sep, setting = value.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {value!r}")
    return name.strip(), setting.strip()


def settings_text(args: argparse.Namespace) -> str:
    """What the banner echoes: every setting that changes how the broker behaves (the port is in its address)."""
    # Redpanda's bucket holds one second of the rate (QuotaBroker ignores the window settings there).
    windows, size = (1, 1.0) if args.enforcement == "redpanda" else (args.quota_window_num, args.quota_window_size_s)
    window = f"{windows} x {size:g} s window{'s' if windows != 1 else ''}"
    if args.controller_mutation_rate is None:
        parts = ["no controller mutation quota"]
    else:
        rate = args.controller_mutation_rate
        burst = rate * windows * size
        parts = [f"controller mutation quota {rate:g}/s per principal, burst {burst:g} mutations over {window}"]
    parts.append(f"enforcement {args.enforcement}")
    if args.num_brokers > 1:
        parts.append(f"{args.num_brokers} brokers, controller node 0")
    if args.metadata_lag_ms:
        parts.append(f"metadata lag {args.metadata_lag_ms:g} ms on the brokers but the controller")
    parts.append(f"at most {args.max_records_per_op} records per operation")
    if args.request_percentage is not None:
        parts.append(f"request quota {args.request_percentage:g}% per principal")
    if args.request_time_cost_ms is not None:
        parts.append(f"request time {args.request_time_cost_ms:g} ms per request")
    if args.user:
        parts.append(f"SASL/PLAIN users {', '.join(name for name, _ in args.user)}")
    if args.broker_config:
        parts.append("broker configs " + ", ".join(f"{name}={value}" for name, value in args.broker_config))
    return "; ".join(parts)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m throttled_admin.testing", description=__doc__)
    parser.add_argument("--port", type=int, default=9092, help="port of node 0 (others follow); 0 = free port")
    parser.add_argument("--num-brokers", type=int, default=1, metavar="N", help="nodes of the cluster (default 1)")
    parser.add_argument(
        "--controller-mutation-rate", type=float, default=None, metavar="R", help="mutations/s per principal"
    )
    parser.add_argument(
        "--quota-window-num",
        type=int,
        default=11,
        metavar="N",
        help="quota windows, Kafka's default 11 (burst N x S x R)",
    )
    parser.add_argument(
        "--quota-window-size-s", type=float, default=1.0, metavar="S", help="seconds a quota window, Kafka's default 1"
    )
    parser.add_argument("--request-percentage", type=float, default=None, help="request quota per principal (KIP-124)")
    parser.add_argument("--request-time-cost-ms", type=float, default=None, help="fixed request time per request")
    parser.add_argument(
        "--enforcement",
        choices=["by-version", "strict", "permissive", "redpanda"],
        default="by-version",
        help="how the quota refuses (docs/testing-broker.md's dialects; default by-version: Apache Kafka 4)",
    )
    parser.add_argument(
        "--max-records-per-op",
        type=int,
        default=MAX_RECORDS_PER_USER_OP,
        help="KRaft's cap on one operation's records and partitions",
    )
    parser.add_argument(
        "--metadata-lag-ms", type=float, default=0, help="non-controller nodes see topic changes this much later"
    )
    parser.add_argument(
        "--user", action="append", type=_user, default=[], metavar="NAME:PASSWORD", help="enable SASL/PLAIN"
    )
    parser.add_argument(
        "--broker-config",
        action="append",
        type=_setting,
        default=[],
        metavar="NAME=VALUE",
        help="a static broker config (num.partitions, default.replication.factor, log.retention.hours, ...); "
        "repeatable",
    )
    return parser


def make_broker(args: argparse.Namespace) -> QuotaBroker:
    """The broker the options describe (ValueError for a bad combination). It owns its process: its controller
    holds the garbage collector off while it handles a mutation (``QuotaBroker(owns_process=True)``)."""
    return QuotaBroker(
        port=args.port,
        num_brokers=args.num_brokers,
        controller_mutation_rate=args.controller_mutation_rate,
        quota_window_num=args.quota_window_num,
        quota_window_size_s=args.quota_window_size_s,
        enforcement=args.enforcement,
        users=dict(args.user) if args.user else None,
        request_percentage=args.request_percentage,
        request_time_cost_ms=args.request_time_cost_ms,
        max_records_per_op=args.max_records_per_op,
        metadata_lag_ms=args.metadata_lag_ms,
        broker_configs=dict(args.broker_config) or None,
        owns_process=True,
    )


def _in_flags(message: str, args: argparse.Namespace) -> str:
    """QuotaBroker's words for a bad setting, its parameters named by this command's flags (quota_window_num is
    --quota-window-num)."""
    for dest in vars(args):
        if "_" in dest:  # (not a word of the message: user, port)
            message = re.sub(rf"(?<![\w-]){re.escape(dest)}\b", "--" + dest.replace("_", "-"), message)
    return message


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        broker = make_broker(args)
    except ValueError as exc:
        parser.error(_in_flags(str(exc), args))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        broker.start()
    except OSError as exc:
        # One line, no traceback: the usual cause is a port already in use (its words name which of the ports)
        ports = f"{args.port}" if args.num_brokers == 1 else f"{args.port}-{args.port + args.num_brokers - 1}"
        where = f"127.0.0.1:{ports}" if args.port else "127.0.0.1 (free ports)"
        print(f"{parser.prog}: error: cannot listen on {where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        print(
            f"QuotaBroker listening on {broker.bootstrap_servers}: {settings_text(args)} (Ctrl-C to stop)", flush=True
        )
        stop.wait()
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
