"""throttled_admin: Kafka topic administration that survives broker quotas.

A drop-in for confluent-kafka's ``AdminClient`` with the Java AdminClient's KIP-599 semantics (retry only
the throttled topics, one deadline per call), KIP-219 client-side back-off, and KIP-124-style throttle
metrics exported through OpenTelemetry. The quota-enforcing test broker is in ``throttled_admin.testing``.
"""

from confluent_kafka.cimpl import NewPartitions, NewTopic

from throttled_admin._client import ThrottledAdminClient
from throttled_admin._engine import MutationQuota
from throttled_admin._errors import (
    CannotConnectError,
    ClientClosedError,
    ClientClosedNotSentError,
    ClientClosedOutcomeUnknownError,
    NotSentError,
    NotSentReason,
    NotYetVisibleError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    PossiblyAppliedError,
    ThrottlingQuotaExceededException,
    TopicValueError,
)
from throttled_admin._options import CreatePartitionsOptions, CreateTopicsOptions, DeleteTopicsOptions
from throttled_admin._outcomes import CallOutcomes, TopicOutcome, collect_outcomes
from throttled_admin._version import __version__

# Tracebacks and reprs name the public path (``throttled_admin.NotSentError``), as httpx does; pickling finds the
# classes there too.
for _error in (
    CannotConnectError,
    ClientClosedError,
    ClientClosedNotSentError,
    ClientClosedOutcomeUnknownError,
    NotSentError,
    NotSentReason,
    NotYetVisibleError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    PossiblyAppliedError,
    ThrottlingQuotaExceededException,
    TopicValueError,
):
    _error.__module__ = __name__
del _error

__all__ = [
    "CallOutcomes",
    "CannotConnectError",
    "ClientClosedError",
    "ClientClosedNotSentError",
    "ClientClosedOutcomeUnknownError",
    "CreatePartitionsOptions",
    "CreateTopicsOptions",
    "DeleteTopicsOptions",
    "MutationQuota",
    "NewPartitions",
    "NewTopic",
    "NotSentError",
    "NotSentReason",
    "NotYetVisibleError",
    "OutcomeUnknownError",
    "OutcomeUnknownReason",
    "PossiblyAppliedError",
    "ThrottledAdminClient",
    "ThrottlingQuotaExceededException",
    "TopicOutcome",
    "TopicValueError",
    "__version__",
    "collect_outcomes",
]
