"""The client's constructor settings, checked before librdkafka sees them, and the conf callbacks it owns.

- Every keyword is checked with a message naming the setting (a bad value never surfaces later as a failed call).
- The client owns ``throttle_cb`` and ``error_cb``: throttle events feed the scheduler's KIP-219 gate and the
  metrics; authentication errors fail pending work at once. A callback from ``conf`` is still called, after
  ours, and so is ``stats_cb``, but not inside ``poll()`` on the scheduler's thread: they run in order on the
  client's serial user-code thread, so a slow one delays nothing of the client's. Whatever they raise is kept
  for the application's next ``poll()``, which raises it as confluent-kafka's does (``_driver.callback_errors``).
- The client reads librdkafka's log on its way (``_driver.librdkafka_log``): some connection failures are told nowhere
  else. What the client finds itself (a listener that requires SASL, or speaks TLS on one side only) goes to the
  ``error_cb`` from conf (or is logged when there is none), as librdkafka reports its own (the reporter
  ``install_callbacks`` returns).
- The callbacks reach the scheduler, never the client: librdkafka's handle keeps its callbacks alive, and a
  path back to the client would be a cycle that keeps librdkafka's threads and sockets alive.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaError
from opentelemetry.metrics import MeterProvider

from throttled_admin._driver.callback_errors import CallbackErrors
from throttled_admin._driver.handshake_drops import said_plainly
from throttled_admin._driver.librdkafka_log import tap_logs
from throttled_admin._driver.secret_hider import SecretHider
from throttled_admin._engine import RetryBackoff
from throttled_admin._telemetry.metrics import check_metric_attributes

__all__ = ["USER_CALLBACKS", "ClientSettings", "EventSink", "install_callbacks"]

log = logging.getLogger("throttled_admin")

USER_CALLBACKS = ("throttle_cb", "error_cb", "stats_cb")  # the application's own callbacks in conf
_LIBRDKAFKA_MAX_TIMEOUT_MS = 3_600_000


def _positive_int(name: str, value: Any, *, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or (maximum is not None and value > maximum):
        bound = f" and at most {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} must be a positive int{bound}, got {value!r}")
    return value


def _milliseconds(conf: dict[str, Any], key: str, default: float) -> float:
    value = conf.get(key, default)
    # (a string as given, not its repr: a redactor hides a value it knows only as written, not with '\\' doubled)
    shown = f"'{value}'" if isinstance(value, str) else repr(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"conf[{key!r}] must be a number of milliseconds, got {shown}") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"conf[{key!r}] must be a non-negative number of milliseconds, got {shown}")
    return number


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _check_bootstrap_protocols(conf: dict[str, Any]) -> None:
    """A ``PROTOCOL://HOST:PORT`` entry of ``bootstrap.servers`` names ``security.protocol``'s protocol: librdkafka
    drops one that names another (its log's "protocol ... does not match security.protocol setting", and nowhere
    else), so a client given only such entries tries no broker and every call waits out its timeout."""
    key = "bootstrap.servers" if "bootstrap.servers" in conf else "metadata.broker.list"
    servers = conf.get(key)
    if not isinstance(servers, str):
        return
    setting = str(conf.get("security.protocol", "plaintext"))
    for entry in (part.strip() for part in servers.split(",")):
        prefix, found, _ = entry.partition("://")
        if not found:
            continue
        if prefix.upper() not in _PROTOCOLS:
            raise ValueError(
                f"{key}: {entry!r}: {prefix!r} is not a Kafka protocol ({', '.join(_PROTOCOLS)}); give HOST:PORT"
            )
        if prefix.upper() != setting.upper():
            raise ValueError(
                f"{key}: {entry!r} names {prefix.upper()}, but security.protocol is {setting} (librdkafka "
                f"would drop the entry and try no broker): set security.protocol={prefix.upper()}, or give HOST:PORT"
            )


@dataclass(frozen=True)
class ClientSettings:
    retry_on_quota_violation: bool
    default_api_timeout_ms: int
    metrics_num_samples: int
    metrics_sample_window_ms: int
    backoff: RetryBackoff
    metric_attributes: dict[str, str | bool | int | float]
    socket_timeout_s: float = 60.0  # librdkafka's socket.timeout.ms: how long an abandoned request holds its connection

    @classmethod
    def check(
        cls,
        conf: Any,
        *,
        retry_on_quota_violation: Any,
        default_api_timeout_ms: Any,
        meter_provider: Any,
        metrics_num_samples: Any,
        metrics_sample_window_ms: Any,
        mutation_quota: Any,
        metric_attributes: Any = None,
    ) -> ClientSettings:
        from throttled_admin._engine import MutationQuota

        if not isinstance(conf, dict):
            raise TypeError(f"conf must be a dict of librdkafka settings, got {type(conf).__name__}")
        if not isinstance(retry_on_quota_violation, bool):
            raise TypeError(f"retry_on_quota_violation must be a bool, got {retry_on_quota_violation!r}")
        if meter_provider is not None and not isinstance(meter_provider, MeterProvider):
            kind = type(meter_provider).__name__
            raise TypeError(f"meter_provider must be an opentelemetry.metrics.MeterProvider or None, got {kind}")
        if mutation_quota is not None and not isinstance(mutation_quota, MutationQuota):
            raise TypeError(f"mutation_quota must be a MutationQuota or None, got {type(mutation_quota).__name__}")
        for key in USER_CALLBACKS:
            if key in conf and conf[key] is not None and not callable(conf[key]):
                raise TypeError(f"conf[{key!r}] must be callable, got {type(conf[key]).__name__}")
        _check_bootstrap_protocols(conf)
        backoff = RetryBackoff(
            initial_ms=_milliseconds(conf, "retry.backoff.ms", 100),
            max_ms=_milliseconds(conf, "retry.backoff.max.ms", 1000),
        )
        return cls(
            retry_on_quota_violation=retry_on_quota_violation,
            # A call's deadline may exceed librdkafka's per-request limit: requests are capped, not the call.
            default_api_timeout_ms=_positive_int("default_api_timeout_ms", default_api_timeout_ms),
            metrics_num_samples=_positive_int("metrics_num_samples", metrics_num_samples, maximum=1000),
            metrics_sample_window_ms=_positive_int("metrics_sample_window_ms", metrics_sample_window_ms),
            backoff=backoff,
            metric_attributes=check_metric_attributes(metric_attributes),
            socket_timeout_s=_milliseconds(conf, "socket.timeout.ms", 60000) / 1000,
        )


class EventSink(Protocol):
    """Where the client's callbacks deliver: the scheduler (``on_throttle``, ``on_error``)."""

    def on_throttle(self, node_id: int, throttle_s: float) -> None: ...

    def on_error(self, error: KafkaError) -> None: ...

    def on_log(self, message: str) -> None: ...


class _CollectedLogger:
    """The ``logger`` from conf, whose exceptions wait for the application's poll() (it runs on the user-code
    thread, from the client's tap of librdkafka's log)."""

    def __init__(self, log: Callable[..., None]) -> None:
        self.log = log


def _deliver(sink: Callable[[], EventSink | None], what: str, send: Callable[[EventSink], None]) -> None:
    """Hands an event to the scheduler, once it exists; a failure there is logged, never raised into librdkafka."""
    target = sink()
    if target is None:
        return
    try:
        send(target)
    except Exception:
        log.exception("%s failed", what)


def install_callbacks(
    conf: dict[str, Any],
    sink: Callable[[], EventSink | None],
    run_user: Callable[[Callable[[], None]], threading.Event | None],
    errors: CallbackErrors,
    hider: SecretHider,
) -> tuple[dict[str, Any], Callable[[KafkaError], None]]:
    """A copy of ``conf`` whose callbacks feed ``sink()`` (None until the scheduler exists) and then the user's own,
    and where an error the client finds itself goes: where librdkafka's own go, the ``error_cb`` from conf (on the
    user-code thread), or the log when there is none. What the user's callbacks (and ``logger``) raise goes to
    ``errors``. librdkafka's error events reach both said plainly where it says too little (``said_plainly``), and
    its events and log lines with ``hider``'s secrets hidden."""
    conf = dict(conf)
    run_user = errors.counted(run_user)  # only conf callbacks are handed over here: poll() waits for them
    user = {key: errors.wrap(key, conf[key]) for key in USER_CALLBACKS if conf.get(key) is not None}
    for key in USER_CALLBACKS:
        conf.pop(key, None)
    user_throttle, user_error, user_stats = user.get("throttle_cb"), user.get("error_cb"), user.get("stats_cb")

    def throttle_cb(event: Any) -> None:
        _deliver(
            sink,
            "recording a throttle event",
            lambda target: target.on_throttle(int(event.broker_id), float(event.throttle_time)),
        )
        if user_throttle is not None:
            run_user(functools.partial(user_throttle, event))

    def report(error: KafkaError) -> None:
        if user_error is not None:
            run_user(functools.partial(user_error, error))
        else:
            log.warning("%s", error.str())

    def error_cb(error: KafkaError) -> None:
        error = hider.error(said_plainly(error, conf.get("security.protocol", "plaintext")))
        _deliver(sink, "handling a librdkafka error event", lambda target: target.on_error(error))
        if user_error is not None:
            run_user(functools.partial(user_error, error))

    def on_fail(line: str) -> None:
        _deliver(sink, "handling a librdkafka log line", lambda target: target.on_log(line))

    conf["throttle_cb"] = throttle_cb
    conf["error_cb"] = error_cb
    if conf.get("logger") is not None:  # confluent-kafka raises what the logger raises from poll(), too
        conf["logger"] = _CollectedLogger(errors.wrap("logger", conf["logger"].log))
    tap_logs(conf, on_fail, run_user, hider.text)
    if user_stats is not None:
        conf["stats_cb"] = lambda stats: run_user(functools.partial(user_stats, stats))
    return conf, report
