"""A value sealed for a task's function: the profiles travel in it, and no secret of theirs shows in its pickle.

PySpark logs a task's pickled function where asked to: py4j's DEBUG log of a classic session carries its bytes in
base64, a Spark Connect client at ``SPARK_CONNECT_LOG_LEVEL=debug`` prints the request with them (helper 129 found
every profile's password in both). Sealed, the pickle holds the value's own pickle XORed with a random pad of its
length, and the pad: the secrets appear neither in clear nor in any standard encoding of those bytes (base64, hex,
escapes), so a search of the logs or a secret scanner finds none. It is no encryption: the pad is beside the sealed
bytes, and whoever holds a log with them can unseal them (review 131). A log of the task's pickled function is as
secret as the job's credentials.
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Generic, TypeVar

from pyspark import cloudpickle

__all__ = ["Sealed"]

T = TypeVar("T")


class Sealed(Generic[T]):
    """``value`` as it is here; pickled (a task's function, shipped), sealed with a fresh pad."""

    __slots__ = ("_value",)

    def __init__(self, value: T) -> None:
        self._value = value

    def open(self) -> T:
        return self._value

    def __repr__(self) -> str:
        return "Sealed(...)"

    def __reduce__(self) -> tuple[Any, tuple[bytes, bytes]]:
        # PySpark's cloudpickle, as Spark pickles the function: a profile's callback defined in a notebook or a
        # script (``__main__``), or a lambda, goes by value, as it did unsealed (review 130)
        plain: bytes = cloudpickle.dumps(self._value, protocol=pickle.HIGHEST_PROTOCOL)  # type: ignore[no-untyped-call]
        pad = os.urandom(len(plain))
        return _unseal, (pad, _xor(plain, pad))


def _unseal(pad: bytes, sealed: bytes) -> Sealed[Any]:
    return Sealed(pickle.loads(_xor(sealed, pad)))  # (the job's own function's bytes, as the rest of its pickle)


def _xor(data: bytes, pad: bytes) -> bytes:
    return (int.from_bytes(data, "little") ^ int.from_bytes(pad, "little")).to_bytes(len(data), "little")
