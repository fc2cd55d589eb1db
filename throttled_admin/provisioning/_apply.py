"""A whole plan: rows grouped by quota entity (cluster, principal), every group concurrently in its own
thread, one result per row in plan order."""

from __future__ import annotations

import dataclasses
import difflib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from opentelemetry.metrics import MeterProvider

from throttled_admin.provisioning._budget import check_timeout
from throttled_admin.provisioning._executor import run_group
from throttled_admin.provisioning._plan import PlanError, PlanRow
from throttled_admin.provisioning._profile import Profile, ProfilesArg, as_profiles
from throttled_admin.provisioning._progress import Progress, ProgressCallback
from throttled_admin.provisioning._results import RowResult
from throttled_admin.provisioning._stop import PlanStop

__all__ = ["MAX_CONCURRENT_ENTITIES", "apply_plan", "check_entities", "group_rows"]

#: How many quota entities one ``apply_plan`` call (one Spark task) runs at once by default: one thread
#: and one librdkafka client each (a few MB and a few threads apiece); more wait for a free one.
MAX_CONCURRENT_ENTITIES = 128


def group_rows(
    rows: Sequence[PlanRow], profiles: Mapping[str, Profile]
) -> dict[tuple[str, str], tuple[Profile, list[int]]]:
    """(bootstrap.servers, principal) -> (the profile that runs it, indexes of its rows). Profiles that
    name the same entity share one group: two clients would each believe they own the whole quota.
    Raises ``PlanError`` for a row naming no profile, before anything is sent."""
    unknown = sorted({row.cluster for row in rows if row.cluster not in profiles}, key=str)
    if unknown:
        index = next(i for i, row in enumerate(rows) if row.cluster == unknown[0])
        # a profile named by more of the same words first (west for west-payments), else the closest spelling
        close = sorted(p for p in profiles if p.startswith(str(unknown[0])) or str(unknown[0]).startswith(p))
        close = close or difflib.get_close_matches(str(unknown[0]), list(profiles), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise PlanError(
            f"{rows[index].where(index)}: field 'cluster': no profile named {unknown[0]!r} "
            f"(profiles: {', '.join(sorted(profiles)) or 'none'}){hint}"
        )
    check_entities(profiles, [row.cluster for row in rows])
    groups: dict[tuple[str, str], tuple[Profile, list[int]]] = {}
    for index, row in enumerate(rows):
        profile = profiles[row.cluster]
        groups.setdefault(profile.group_key, (profile, []))[1].append(index)
    return groups


def check_entities(profiles: Mapping[str, Profile], clusters: Iterable[str]) -> None:
    """``PlanError`` when two of the profiles the plan's ``clusters`` name are one quota entity and differ: they
    would run as one group with the first one's settings, the other's dropped without a word."""
    first: dict[tuple[str, str], Profile] = {}
    for name in dict.fromkeys(clusters):
        profile = profiles[name]
        runs = first.setdefault(profile.group_key, profile)
        if runs is not profile and (differ := _differences(runs, profile)):
            raise PlanError(
                f"profiles {runs.name!r} and {profile.name!r} name one quota entity (bootstrap.servers and principal) "
                f"and would run as one group, with the settings of {runs.name!r}, but differ in {', '.join(differ)}: "
                "give them the same settings, or plan one of them"
            )


def _differences(one: Profile, other: Profile) -> list[str]:
    """The settings two profiles of one entity differ in, by name (never a value: it may be a secret)."""
    keys = [
        key
        for key in one.conf.keys() | other.conf.keys()
        if (key in one.conf) != (key in other.conf) or str(one.conf.get(key)) != str(other.conf.get(key))
    ]
    fields = [f for f in ("mutation_rate", "request_timeout_s") if getattr(one, f) != getattr(other, f)]
    return fields + sorted(keys)


def apply_plan(
    rows: Sequence[PlanRow],
    profiles: ProfilesArg,
    *,
    allow_delete: bool = False,
    dry_run: bool = False,
    progress: ProgressCallback | None = None,
    max_concurrent_entities: int = MAX_CONCURRENT_ENTITIES,
    meter_provider: MeterProvider | None = None,
    timeout_s: float | None = None,
    on_result: Callable[[int, RowResult], None] | None = None,
    stop: PlanStop | None = None,
) -> list[RowResult]:
    """Run every group concurrently (the work is I/O: waiting on brokers and quotas) and return one
    result per row, in plan order. ``progress`` is called from the groups' threads, one call at a time.

    ``profiles`` maps each plan cluster to a ``Profile`` or to a conf mapping as profiles.yaml has it
    (librdkafka settings plus optional ``mutation_rate`` and ``request_timeout_s``).
    ``max_concurrent_entities``: how many quota entities run at once (one thread and one client each);
    the others wait for a free one. ``meter_provider``: where the groups' clients send their metrics (else the
    global provider); each group's series carry its profile's name and principal (``throttled_admin.cluster``,
    ``throttled_admin.principal``). ``timeout_s``: each group's time budget, from its start; by default twice its
    predicted time plus a minute, moved on by a throttle its client learns (3 times a row at most), so a debt the
    principal owes is waited out. Rows the quota would hold past the budget end ``not_sent`` (docs/pipeline.md).
    ``on_result(index, result)``: called as each row's result is known (``index`` its place in ``rows``; told again
    if it changes, the last told is the one returned), one call at a time with ``progress``, before the call returns.
    ``stop``: a ``PlanStop`` whose ``stop()``, from another thread, ends the plan early: nothing more is sent."""
    checked = as_profiles(profiles)
    timeout_s = check_timeout(timeout_s)
    if isinstance(max_concurrent_entities, bool) or not isinstance(max_concurrent_entities, int):
        raise TypeError(f"max_concurrent_entities: expected an int >= 1, got {max_concurrent_entities!r}")
    if max_concurrent_entities < 1:
        raise ValueError(f"max_concurrent_entities: expected an int >= 1, got {max_concurrent_entities}")
    # Rows built in code carry no source: name them by their place in the whole plan, not in their group.
    rows = [row if row.source else dataclasses.replace(row, source=f"row {i + 1}") for i, row in enumerate(rows)]
    groups = group_rows(rows, checked)
    lock = threading.Lock()

    def serialized(update: Progress) -> None:
        assert progress is not None
        with lock:
            progress(update)

    callback = serialized if progress is not None else None
    results: list[RowResult | None] = [None] * len(rows)
    if not groups:
        return []
    with ThreadPoolExecutor(
        max_workers=min(len(groups), max_concurrent_entities), thread_name_prefix="provision"
    ) as pool:
        futures = {
            pool.submit(
                run_group,
                [rows[i] for i in indexes],
                profile,
                allow_delete=allow_delete,
                dry_run=dry_run,
                progress=callback,
                meter_provider=meter_provider,
                timeout_s=timeout_s,
                on_result=_in_plan(on_result, indexes, lock),
                member=None if stop is None else stop._member(indexes),
            ): indexes
            for profile, indexes in groups.values()
        }
        for future, indexes in futures.items():
            for index, result in zip(indexes, future.result(), strict=True):
                results[index] = result
    return [r for r in results if r is not None]


def _in_plan(
    on_result: Callable[[int, RowResult], None] | None, indexes: list[int], lock: threading.Lock
) -> Callable[[int, RowResult], None] | None:
    """A group's ``on_result``, its row's index turned into the plan's, one call at a time across the groups."""
    if on_result is None:
        return None
    callback = on_result

    def in_plan(index: int, result: RowResult) -> None:
        with lock:
            callback(indexes[index], result)

    return in_plan
