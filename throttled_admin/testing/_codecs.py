"""kafka-python's codecs compiled before a broker serves its first request.

kafka-python 3 compiles each message's decoder and encoder, version by version, the first time it meets them
(``StructField.compiled_decode_from`` / ``compiled_encode_into``: generated source, ``compile`` and ``exec``), and
keeps them for the process. Compiled on first use, a broker's first answer of a kind took what Kafka never takes:
DescribeQuorum v2's encoder alone is 11.5 ms of CPU, which on QuotaBroker's event loop held the interpreter lock
against the controller thread's creates, 44 ms of a bulk call's wall time (issue 40). All of them for every
version QuotaBroker serves take about 0.17 s, once per process, as the first broker starts (brokers started at once
from several threads: one compiles, the others wait for it).

Only an optimisation: a codec that fails to compile here (a kafka-python whose classes compile differently) is left
to be compiled on first use, as before, and never stops a broker from starting.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from throttled_admin.testing._handlers import API_SPECS

__all__ = ["compile_codecs"]

log = logging.getLogger("throttled_admin.testing")

_lock = threading.Lock()
_compiled = False


def compile_codecs() -> None:
    """Every request decoder and response encoder of the versions QuotaBroker serves, compiled once per process."""
    global _compiled
    with _lock:
        if _compiled:
            return
        for spec in API_SPECS.values():
            for version in range(spec.min_version, spec.max_version + 1):
                _compile(spec.request, version, decoder=True)
                _compile(spec.response, version, decoder=False)
        _compiled = True


def _compile(message: Any, version: int, *, decoder: bool) -> None:
    try:
        struct, flexible = message._struct, message.flexible_version_q(version)
        if decoder:
            struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=message[None])
        else:
            struct.compiled_encode_into(version, compact=flexible, tagged=flexible)
    except Exception:  # (left to its first use)
        log.debug("%s v%d not compiled ahead", getattr(message, "__name__", message), version, exc_info=True)
