"""How the evaluate flow's threads run the work units: a few task runs pull them in plan order; a unit that
fails on I/O runs again; a unit that fails otherwise is kept and the other units still run; the first
failure in plan order is raised once every unit has finished."""

from __future__ import annotations

import threading

import duckdb
import pytest

import flows.evaluate as evaluate_module
from flows.evaluate import UNIT_RETRY_DELAYS_S, MAX_WORKERS, UnitQueue, run_unit_retrying
from flows.progress import UnitProgress
from tasks.run.work_units import UnitResult


class Unit:
    def __init__(self, index: int) -> None:
        self.index, self.label, self.n_items = index, f"unit-{index}", 10


def result(unit: Unit) -> UnitResult:
    return UnitResult(label=unit.label, n_rows=unit.n_items, n_ok=unit.n_items, n_cache_hits=0, n_failures=0)


def test_the_queue_hands_out_each_unit_once_in_plan_order_across_threads():
    units = [Unit(i) for i in range(500)]
    queue, taken, lock = UnitQueue(units), [], threading.Lock()

    def pull() -> None:
        while (item := queue.take()) is not None:
            with lock:
                taken.append(item[0])

    threads = [threading.Thread(target=pull) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(500)) and queue.take() is None


def test_a_unit_failing_on_io_runs_again_after_each_delay_and_a_bug_is_raised_at_once(monkeypatch):
    calls, slept = [], []

    def flaky(unit, ctx):
        calls.append(unit.index)
        if len(calls) <= len(UNIT_RETRY_DELAYS_S):
            raise duckdb.IOException("Could not set lock on file")
        return result(unit)

    monkeypatch.setattr(evaluate_module, "run_unit", flaky)
    assert run_unit_retrying(Unit(3), None, sleep=slept.append).n_rows == 10
    assert calls == [3] * (len(UNIT_RETRY_DELAYS_S) + 1) and slept == list(UNIT_RETRY_DELAYS_S)

    def buggy(unit, ctx):
        calls.append(unit.index)
        raise ValueError("a bug")

    calls.clear()
    monkeypatch.setattr(evaluate_module, "run_unit", buggy)
    with pytest.raises(ValueError):
        run_unit_retrying(Unit(4), None, sleep=slept.append)
    assert calls == [4]


def test_every_unit_runs_in_a_few_task_runs_and_the_first_failure_in_plan_order_is_raised(prefect_harness,
                                                                                          monkeypatch):
    from prefect import flow
    from prefect.task_runners import ThreadPoolTaskRunner

    ran: list[int] = []

    def some_fail(unit, ctx):
        ran.append(unit.index)
        if unit.index in (7, 3):
            raise ValueError(f"unit {unit.index} failed")
        return result(unit)

    monkeypatch.setattr(evaluate_module, "run_unit", some_fail)
    units = [Unit(i) for i in range(12)]
    progress = UnitProgress(12, 120, log=lambda line: None, every_s=0)

    @flow(task_runner=ThreadPoolTaskRunner(max_workers=MAX_WORKERS))
    def pull_all(fail: bool) -> tuple[int, list[int]]:
        chosen = units if fail else [u for u in units if u.index not in (3, 7)]
        collect = evaluate_module._pulled_units(chosen, None, progress)
        try:
            return len(collect()), []
        except ValueError as error:
            return -1, [int(str(error).split()[1])]

    assert pull_all(fail=False) == (10, [])
    ran.clear()
    assert pull_all(fail=True) == (-1, [3])  # unit 3 comes before unit 7 in the plan
    assert sorted(ran) == list(range(12))  # the failures stopped no other unit
