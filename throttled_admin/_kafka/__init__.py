"""Kafka's own rules, shared by the client and the test broker (``throttled_admin.testing``): the KIP-599
token bucket (``token_bucket``) and the topic-name rules (``topic_names``). Imports nothing of the project."""
