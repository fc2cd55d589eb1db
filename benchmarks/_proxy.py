"""A timestamping TCP proxy in front of a Kafka broker: when each request was written, and each answer read.

Kafka's request log (``kafka.request.logger`` at DEBUG) says when the broker *read* a request, not when the
client wrote it: a request that waits in a muted connection (KIP-219) or behind another request on the same
connection sits unread in the socket, and the log does not see that wait. This proxy sees it: it forwards every
byte at once and prints one JSON line per Kafka frame (``time.time()`` when the frame's last byte arrived, the
proxy's own port towards the broker, which is the client port in the broker's request log, and the request
header), so a benchmark can set "written at" beside the broker's "read at".

It runs as a process of its own (so that its work does not share a GIL with the clients being measured):

    python benchmarks/_proxy.py --port 0 --target-file PATH/server.properties --log PATH/proxy.log

The broker's PLAINTEXT port is read from ``listeners=`` in ``--target-file`` at each new connection (the broker
advertises the proxy's port, so every client connection comes through here). The first line on stdout is
``listening on PORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import struct
import sys
import time
from pathlib import Path
from typing import IO


def _target(properties: Path) -> tuple[str, int]:
    match = re.search(r"^listeners=(?:.*,)?PLAINTEXT://([^:,]+):(\d+)", properties.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no PLAINTEXT listener in {properties}")
    return match.group(1), int(match.group(2))


def _header(frame: bytes) -> dict[str, object]:
    """A request header: api key, version, correlation id and client id (every header version starts so)."""
    api_key, version, correlation_id, length = struct.unpack(">hhih", frame[:10])
    client_id = frame[10 : 10 + length].decode(errors="replace") if length >= 0 else None
    return {"api": api_key, "v": version, "corr": correlation_id, "client_id": client_id}


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, log: IO[str], kind: str, port: int) -> None:
    try:
        while True:
            size_bytes = await reader.readexactly(4)
            frame = await reader.readexactly(struct.unpack(">i", size_bytes)[0])
            at = time.time()
            writer.write(size_bytes + frame)
            entry: dict[str, object] = {"t": at, "kind": kind, "port": port, "size": len(frame)}
            entry |= _header(frame) if kind == "request" else {"corr": struct.unpack(">i", frame[:4])[0]}
            log.write(json.dumps(entry) + "\n")
            log.flush()
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve(port: int, properties: Path, log: IO[str]) -> None:
    async def connection(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_connection(*_target(properties))
        except OSError:
            client_writer.close()
            return
        upstream_port = broker_writer.get_extra_info("sockname")[1]
        await asyncio.gather(
            _pump(client_reader, broker_writer, log, "request", upstream_port),
            _pump(broker_reader, client_writer, log, "response", upstream_port),
        )

    server = await asyncio.start_server(connection, "127.0.0.1", port)
    print(f"listening on {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--target-file", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    with args.log.open("a") as log:
        try:
            asyncio.run(_serve(args.port, args.target_file, log))
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":
    main()
