"""pytest plugin (entry point ``pytest11``): the ``quota_broker`` fixture factory.

It lives outside ``throttled_admin.testing`` and imports it only when the fixture is used: pytest loads
every installed plugin at start-up, and the test broker needs the ``testing`` extra (kafka-python), so
installing throttled_admin without that extra must not break pytest for anyone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from throttled_admin.testing import QuotaBroker


@pytest.fixture
def quota_broker() -> Iterator[Callable[..., QuotaBroker]]:
    """Start QuotaBrokers with any constructor keywords; each is stopped when the test ends::

    def test_quota(quota_broker):
        broker = quota_broker(controller_mutation_rate=5)
    """
    from throttled_admin.testing import QuotaBroker

    started: list[QuotaBroker] = []

    def factory(**kwargs: Any) -> QuotaBroker:
        broker = QuotaBroker(**kwargs).start()
        started.append(broker)
        return broker

    yield factory
    for broker in started:
        broker.stop()
