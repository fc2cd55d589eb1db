"""A quota-enforcing Kafka broker for tests and demos (needs the ``testing`` extra: kafka-python).

It speaks the real wire protocol through kafka-python's protocol classes and behaves as a Kafka 4 (KRaft)
cluster for topic administration: the controller mutation quota (KIP-599), the request quota (KIP-124),
KIP-219 muting, forwarding (any node accepts mutations), the controller's deadline, KRaft's cap on one
operation and a broker's metadata lag, so quota behaviour can be exercised end to end without a cluster; it also
answers as Redpanda does (``enforcement="redpanda"``). See docs/testing-broker.md.
"""

from __future__ import annotations

import warnings

# kafka-python 3.0 builds its protocol classes from JSON schemas read with importlib.resources.read_text, which
# Python deprecates: every class it loads warns. Loaded here, once, with that warning ignored, so that a project
# testing with warnings as errors (``filterwarnings = error``) can use QuotaBroker and the quota_broker fixture.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"(read|open)_text is deprecated", category=DeprecationWarning)
    try:
        import kafka.protocol  # noqa: F401
    except ImportError as exc:  # depends on the environment (tests/test_broker_plugin_and_cli.py)
        from throttled_admin.testing._extra import missing_extra

        raise missing_extra(exc) from exc

    from throttled_admin.testing._broker import Enforcement, QuotaBroker, cluster_or_quota_broker
    from throttled_admin.testing._quotas import QuotaEntity
    from throttled_admin.testing._server import RequestRecord

__all__ = ["Enforcement", "QuotaBroker", "QuotaEntity", "RequestRecord", "cluster_or_quota_broker"]
