from __future__ import annotations

import inspect

import throttled_admin
import throttled_admin.testing


def public_names(module: object) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_") and not inspect.ismodule(getattr(module, n))}


def test_all_lists_exactly_the_public_names_sorted() -> None:
    for module in (throttled_admin, throttled_admin.testing):
        exported = [n for n in module.__all__ if n != "__version__"]
        assert exported == sorted(exported)
        assert set(exported) == public_names(module) - {"annotations"}


def test_drop_in_types_are_confluent_kafkas_own() -> None:
    from confluent_kafka.admin import NewPartitions, NewTopic

    assert throttled_admin.NewTopic is NewTopic
    assert throttled_admin.NewPartitions is NewPartitions
    assert throttled_admin.__version__
