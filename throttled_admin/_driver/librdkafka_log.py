"""librdkafka's log, read by the client on its way to where it was going.

Some of what librdkafka knows reaches the application only as a log line: a broker that closes every connection
right after the handshake is reported as ``FAIL ... Disconnected ... (after 0ms in state UP)`` at level 6, one
that closes it during ApiVersions (a TLS listener) at level 6, an ApiVersions request never answered at level 4,
never to ``error_cb`` (how far each connection got is what the engine's first-contact rule reads); so is a broker
that restarts under an established connection (``NAME/NODEID: Disconnected: connection closed by peer ...``, level
6: the engine's gate then stops holding calls back for the throttle that connection carried). The client
therefore installs its own ``logger``: each ``FAIL`` line goes to the client (which
reports what it finds to ``error_cb``, as librdkafka reports its own authentication failures), and
every line still goes where it would have gone without the client, filtered by the caller's ``log_level``: to
the ``logger`` from conf (called on the client's user-code thread, like the other conf callbacks), or to stderr
in librdkafka's own format. Each line's secrets are hidden first (``secret_hider``).

To see level-6 lines, librdkafka's ``log_level`` is raised to 6 when it is lower (lines above the caller's level
are dropped here). The client reads ``FAIL`` lines of levels 0-6 only. With ``log.connection.close=false``
librdkafka logs connection closes at debug level only, so the client does not see them.

Unlike librdkafka's own printing, lines are printed when the client polls (at least every 0.2 s, and once more
at close()), with that time; librdkafka's levels 5 and 6 both arrive as INFO, so both print as ``%6`` and a
``log_level`` of 5 drops both.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["tap_logs"]

log = logging.getLogger("throttled_admin")

_INFO = 6  # syslog level of librdkafka's connection failures
_DEBUG = 7
# confluent-kafka hands Python logging levels to a logger; librdkafka's syslog levels 5 and 6 are both INFO.
_SYSLOG = {50: 2, 40: 3, 30: 4, 20: 6, 10: 7}


class _Tap:
    """The ``logger`` librdkafka is given: confluent-kafka calls ``log(level, "%s [%s] %s", fac, name, line)``
    from ``poll()``."""

    def __init__(
        self,
        on_fail: Callable[[str], None],
        user_logger: Any,
        run_user: Callable[[Callable[[], None]], object],
        level: int,
        hide: Callable[[str], str],
    ) -> None:
        self._hide = hide
        self._on_fail = on_fail
        self._user_logger = user_logger
        self._run_user = run_user
        self._level = level
        self._failed = False

    def log(self, level: int, fmt: str, *args: Any) -> None:
        line = None  # (a line may quote a secret: a token endpoint's URL, what an identity provider echoed)
        if len(args) == 3 and args[0] == "FAIL" and level > logging.DEBUG:
            line = self._hide(str(args[2]))
            self._on_fail(line)  # debug also logs each failure twice, and broker teardowns
        if _SYSLOG.get(level, _DEBUG) > self._level:
            return
        if len(args) == 3:
            args = (args[0], args[1], self._hide(str(args[2])) if line is None else line)
        if self._user_logger is None:
            _to_stderr(level, fmt, args)
        else:
            self._run_user(functools.partial(self._to_user, level, fmt, args))

    def _to_user(self, level: int, fmt: str, args: tuple[Any, ...]) -> None:
        try:
            self._user_logger.log(level, fmt, *args)
        except Exception:
            if not self._failed:
                self._failed = True
                log.exception("the logger from conf raised; it is contained (later failures are not logged)")


def _to_stderr(level: int, fmt: str, args: tuple[Any, ...]) -> None:
    """librdkafka's default log line (rd_kafka_log_print)."""
    now = time.time()
    if len(args) == 3:
        facility, name, line = args
        text = f"%{_SYSLOG.get(level, _DEBUG)}|{int(now)}.{int(now * 1000) % 1000:03d}|{facility}|{name}| {line}"
    else:
        text = fmt % args
    stream = sys.stderr
    if stream is None:
        return  # no console (pythonw, some daemons): librdkafka's own stderr would go nowhere too
    with contextlib.suppress(OSError, ValueError):  # closed or broken: a log line is not worth failing poll()
        stream.write(text + "\n")


def tap_logs(
    conf: dict[str, Any],
    on_fail: Callable[[str], None],
    run_user: Callable[[Callable[[], None]], object],
    hide: Callable[[str], str],
) -> None:
    """Install the tap into ``conf`` (a copy the client owns); ``on_fail`` gets each FAIL line, on the thread
    that polls; every line is passed on with ``hide``'s secrets hidden (``SecretHider.text``)."""
    try:
        level = _DEBUG if conf.get("debug") else int(conf.get("log_level", _INFO))
    except (TypeError, ValueError):
        return  # librdkafka refuses the value with its own message
    if level < _INFO:
        conf["log_level"] = _INFO
    conf["logger"] = _Tap(on_fail, conf.get("logger"), run_user, level, hide)
