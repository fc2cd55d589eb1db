"""``confluent_kafka.admin`` with ``AdminClient`` bound to ``ThrottledAdminClient``: porting is one line.

    from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource     # before
    from throttled_admin.admin import AdminClient, NewTopic, ConfigResource     # after

Every public name of ``confluent_kafka.admin`` is here and is the very same object, except ``AdminClient``;
tests/test_admin_module.py holds the two modules' names together. Added: ``ThrottledAdminClient``,
``MutationQuota``, the per-call options, ``ThrottlingQuotaExceededException`` and the error kinds
(``NotSentError``, ``CannotConnectError``, ``OutcomeUnknownError``, ``PossiblyAppliedError``, ``NotYetVisibleError``,
``ClientClosedError``, ``ClientClosedNotSentError``, ``ClientClosedOutcomeUnknownError``) with their typed reasons
(``NotSentReason``, ``OutcomeUnknownReason``).
"""

# No ``from __future__ import annotations``: it would add a public name, ``annotations``.

# Imported from where confluent-kafka defines them (the same objects confluent_kafka.admin holds): that module
# imports them without re-exporting, which mypy --strict would refuse here.
from confluent_kafka.admin import string_type
from confluent_kafka.admin._acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin._cluster import DescribeClusterResult
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
from confluent_kafka.admin._group import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ListConsumerGroupsResult,
    MemberAssignment,
    MemberDescription,
)
from confluent_kafka.admin._listoffsets import ListOffsetsResultInfo, OffsetSpec
from confluent_kafka.admin._metadata import (
    BrokerMetadata,
    ClusterMetadata,
    GroupMember,
    GroupMetadata,
    PartitionMetadata,
    TopicMetadata,
)
from confluent_kafka.admin._records import DeletedRecords
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from confluent_kafka.admin._topic import TopicDescription
from confluent_kafka.cimpl import (
    CONFIG_SOURCE_DEFAULT_CONFIG,
    CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG,
    CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
    CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG,
    CONFIG_SOURCE_GROUP_CONFIG,
    CONFIG_SOURCE_STATIC_BROKER_CONFIG,
    CONFIG_SOURCE_UNKNOWN_CONFIG,
    OFFSET_INVALID,
    RESOURCE_ANY,
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    RESOURCE_TRANSACTIONAL_ID,
    RESOURCE_UNKNOWN,
    KafkaError,
    KafkaException,
    NewPartitions,
    NewTopic,
)

from throttled_admin import (
    CannotConnectError,
    ClientClosedError,
    ClientClosedNotSentError,
    ClientClosedOutcomeUnknownError,
    CreatePartitionsOptions,
    CreateTopicsOptions,
    DeleteTopicsOptions,
    MutationQuota,
    NotSentError,
    NotSentReason,
    NotYetVisibleError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    PossiblyAppliedError,
    ThrottledAdminClient,
    ThrottlingQuotaExceededException,
)

# The one difference from confluent_kafka.admin. A plain alias, so AdminClient(conf, ...) and type hints
# written against this module mean ThrottledAdminClient (which is itself a confluent_kafka AdminClient).
AdminClient = ThrottledAdminClient

__all__ = [
    "CONFIG_SOURCE_DEFAULT_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG",
    "CONFIG_SOURCE_GROUP_CONFIG",
    "CONFIG_SOURCE_STATIC_BROKER_CONFIG",
    "CONFIG_SOURCE_UNKNOWN_CONFIG",
    "OFFSET_INVALID",
    "RESOURCE_ANY",
    "RESOURCE_BROKER",
    "RESOURCE_GROUP",
    "RESOURCE_TOPIC",
    "RESOURCE_TRANSACTIONAL_ID",
    "RESOURCE_UNKNOWN",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AdminClient",
    "AlterConfigOpType",
    "BrokerMetadata",
    "CannotConnectError",
    "ClientClosedError",
    "ClientClosedNotSentError",
    "ClientClosedOutcomeUnknownError",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "CreatePartitionsOptions",
    "CreateTopicsOptions",
    "DeleteTopicsOptions",
    "DeletedRecords",
    "DescribeClusterResult",
    "GroupMember",
    "GroupMetadata",
    "KafkaError",
    "KafkaException",
    "ListConsumerGroupsResult",
    "ListOffsetsResultInfo",
    "MemberAssignment",
    "MemberDescription",
    "MutationQuota",
    "NewPartitions",
    "NewTopic",
    "NotSentError",
    "NotSentReason",
    "NotYetVisibleError",
    "OffsetSpec",
    "OutcomeUnknownError",
    "OutcomeUnknownReason",
    "PartitionMetadata",
    "PossiblyAppliedError",
    "ResourcePatternType",
    "ResourceType",
    "ScramCredentialInfo",
    "ScramMechanism",
    "ThrottledAdminClient",
    "ThrottlingQuotaExceededException",
    "TopicDescription",
    "TopicMetadata",
    "UserScramCredentialAlteration",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
    "string_type",
]
