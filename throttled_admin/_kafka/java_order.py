"""The order a Java ``HashMap`` iterates its keys in, for output that must read as a Java tool's or broker's.

kafka-topics.sh prints a topic's configs in the order of ``org.apache.kafka.clients.admin.Config``'s
``HashMap`` (``new HashMap<>()``, filled in the order of the DescribeConfigs response), and a Kafka 4.4 broker
sends a topic's configs in its own ``HashMap``'s order. Either order is the one below: keys by bucket
(``String.hashCode`` spread as ``h ^ (h >>> 16)``, masked by the table size), keys of one bucket in the order
they were put (a resize keeps that order). Bins of eight keys and more become trees in Java: not modelled (no
bucket comes near that for Kafka's few dozen config names).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["hash_map_order"]


def _string_hash(key: str) -> int:
    """``String.hashCode``: over UTF-16 code units, in 32 bits."""
    units = key.encode("utf-16-be")
    value = 0
    for index in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[index : index + 2], "big")) & 0xFFFFFFFF
    return value ^ (value >> 16)


def _table_size(count: int) -> int:
    """A default ``HashMap``'s table after ``count`` puts: 16, doubled whenever the size passes 3/4 of it."""
    size = 16
    while count > size * 3 // 4:
        size *= 2
    return size


def hash_map_order(keys: Iterable[str]) -> list[str]:
    """``keys`` (distinct, in the order they were put) in the order ``new HashMap<>()``'s ``keySet()``
    iterates them."""
    ordered = list(keys)
    mask = _table_size(len(ordered)) - 1
    return sorted(ordered, key=lambda key: _string_hash(key) & mask)  # stable: a bucket keeps put order
