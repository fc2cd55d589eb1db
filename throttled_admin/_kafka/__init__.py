"""Kafka's own rules, shared by the client and the test broker (``throttled_admin.testing``): the KIP-599
token bucket (``token_bucket``), the topic-name rules (``topic_names``) and Kafka 4.4's topic configs as data
(``config_schema``, ``topic_configs``: types, defaults, validators, Kafka's messages), SASL/SCRAM's arithmetic
(``scram``), KRaft's batch cap with the words brokers refuse a mutation in (``refusals``), and which client settings
are secrets (``secrets``). Imports nothing of the project."""
