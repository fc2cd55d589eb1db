"""Topics created with the broker's defaults (``NewTopic(name)``: num_partitions -1): the client counts what the
broker charges, for pacing, learning and metrics alike (issue 27, finding 4). QuotaBroker with ``num.partitions`` set,
over loopback; Apache Kafka 4.4 itself in tests/test_truth_on_kafka.py."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from tests.support import BrokerFactory
from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient
from throttled_admin._driver.secret_hider import SecretHider


def _outcomes(futures: Mapping[str, Future[Any]]) -> dict[str, BaseException | None]:
    return {name: future.exception(120) for name, future in futures.items()}


# Was (finding 4): NewTopic(name) on a cluster with num.partitions=10, at a known rate under strict enforcement: 25 of
# 25 responses throttled and 110 topics refused with error 89 (the client counted each topic as one partition); the
# same topics with an explicit 10: none. mutations-sent-total said 110 where the broker charged 1,100.
def test_topics_with_the_default_partition_count_are_paced_and_counted_as_the_broker_charges(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(
        controller_mutation_rate=50, quota_window_num=1, enforcement="strict", broker_configs={"num.partitions": "10"}
    )
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=50, burst=50)) as admin:
        names = [f"d{i:02d}" for i in range(20)]
        results = _outcomes(admin.create_topics([NewTopic(name) for name in names], timeout_ms=60000))
        metrics = admin.metrics()
    assert results == dict.fromkeys(names)
    assert broker.topics() == dict.fromkeys(names, 10)
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert not [r for r in creates if r.throttle_time_ms > 0 or any(r.errors.values())], "throttled or refused"
    assert metrics["mutations-sent-total"] == sum(r.mutations for r in creates) == 200


def test_a_learned_rate_counts_the_default_partitions(quota_broker: BrokerFactory) -> None:
    """Was (finding 4): MutationQuota() learned 5/s for a 50/s quota (each topic counted as one partition of ten)."""
    broker = quota_broker(controller_mutation_rate=50, quota_window_num=1, broker_configs={"num.partitions": "10"})
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota()) as admin:
        names = [f"l{i:02d}" for i in range(40)]
        results = _outcomes(admin.create_topics([NewTopic(name) for name in names], timeout_ms=60000))
        rate = admin.metrics()["mutation-rate"]
    assert results == dict.fromkeys(names)
    assert 35 <= rate <= 60, f"learned {rate:.1f}/s for a 50/s quota"


def test_the_default_partitions_are_asked_of_the_broker_that_answered(quota_broker: BrokerFactory) -> None:
    """Helper 111 on a three-node Kafka: a create of the broker's default partitions after a node's kill -9 was not
    sent by its deadline, and close() then waited 3 s more: num.partitions was asked of the controller the Metadata
    named, which a KRaft broker picks among the brokers it believes alive, the killed one until it is fenced."""
    from throttled_admin._client import _Transport

    broker = quota_broker(num_brokers=3, broker_configs={"num.partitions": "10"})
    broker.stop_node(0, fenced_after_s=300)  # the stopped node 0 named the controller, as Kafka names one not fenced
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}) as admin:
        transport = _Transport(admin, SecretHider({}))
        assert transport.default_partitions(20.0) == 10  # (before: the DescribeConfigs to node 0 timed out)


def test_a_read_of_the_default_partitions_ends_when_the_reads_are_closed(quota_broker: BrokerFactory) -> None:
    """close() waits for a read under way (librdkafka's handle must outlive it): one waiting on an answer that does
    not come ends once the client's reads are closed, not at its timeout."""
    import threading

    from throttled_admin._client import _Transport
    from throttled_admin._driver.scheduler import ClientGone

    broker = quota_broker()
    swallowed = broker.blackhole_next("DescribeConfigs")
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}) as admin:
        transport = _Transport(admin, SecretHider({}))
        ended: Future[int | None] = Future()

        def read() -> None:
            try:
                ended.set_result(transport.default_partitions(600.0))
            except BaseException as exc:
                ended.set_exception(exc)

        threading.Thread(target=read, daemon=True).start()
        assert swallowed.wait(timeout=30)
        transport.close_reads()
        assert isinstance(ended.exception(timeout=30), ClientGone)
