"""Departures of QuotaBroker from Kafka 4.4.0 that the differential suite found, each named once: a scenario
marked with one is expected to fail (xfail, strict) until QuotaBroker is fixed."""

from __future__ import annotations

D9 = "no re-authentication unless connections.max.reauth.ms > 0"
