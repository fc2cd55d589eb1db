"""Run the test broker standalone: ``python -m throttled_admin.testing --port 9092 --controller-mutation-rate 5``."""

from __future__ import annotations

import argparse
import logging
import signal
import threading

from throttled_admin.testing import QuotaBroker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m throttled_admin.testing", description=__doc__)
    parser.add_argument("--port", type=int, default=9092, help="port of node 0 (others follow); 0 = free port")
    parser.add_argument("--num-brokers", type=int, default=1)
    parser.add_argument("--controller-mutation-rate", type=float, default=None, help="mutations/s per principal")
    parser.add_argument("--quota-window-num", type=int, default=11)
    parser.add_argument("--quota-window-size-s", type=float, default=1.0)
    parser.add_argument("--enforcement", choices=["by-version", "strict", "permissive"], default="by-version")
    parser.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD", help="enable SASL/PLAIN")
    args = parser.parse_args(argv)
    users = dict(u.split(":", 1) for u in args.user) if args.user else None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with QuotaBroker(
        port=args.port,
        num_brokers=args.num_brokers,
        controller_mutation_rate=args.controller_mutation_rate,
        quota_window_num=args.quota_window_num,
        quota_window_size_s=args.quota_window_size_s,
        enforcement=args.enforcement,
        users=users,
    ) as broker:
        print(f"QuotaBroker listening on {broker.bootstrap_servers} (Ctrl-C to stop)", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
