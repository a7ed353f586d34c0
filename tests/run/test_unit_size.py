"""Unit sizing: ``batch_size`` items a unit, until an arm x seed would need more than ``UNITS_PER_ARM_SEED``
units; then that many units, larger, each item in exactly one of them, in order."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tasks.run.work_units import UNITS_PER_ARM_SEED, plan_units, unit_size


def prepared(n_items: int, batch_size: int, arms: int = 2, seeds: tuple[int, ...] = (1, 2, 3)) -> SimpleNamespace:
    """The parts of a prepared run ``plan_units`` reads: its instrument's work items, the arms, seeds and
    batch size of its experiment, and its versions."""
    items = tuple(f"item{i}" for i in range(n_items))
    version = SimpleNamespace(taskset="shop", items=items)
    return SimpleNamespace(
        instrument=SimpleNamespace(work_items=lambda v: v.items),
        experiment=SimpleNamespace(arms=[SimpleNamespace(name=f"arm{a}", version="v1") for a in range(arms)],
                                   seeds=seeds, spec=SimpleNamespace(batch_size=batch_size)),
        versions={"v1": version},
    )


@pytest.mark.parametrize("n_items,batch_size,sizes", [
    (12, 5, [5, 5, 2]),  # small: batch_size rules
    (16 * 200, 200, [200] * 16),  # exactly the most units at batch_size
    (16 * 200 + 1, 200, [201] * 15 + [186]),  # one more item: larger units, no 17th
])
def test_units_of_one_arm_and_seed(n_items, batch_size, sizes):
    assert UNITS_PER_ARM_SEED == 16
    units = plan_units(prepared(n_items, batch_size, arms=1, seeds=(1,)))
    assert [u.n_items for u in units] == sizes
    assert [item for u in units for item in u.batch] == [f"item{i}" for i in range(n_items)]


def test_the_unit_count_stops_growing_with_the_run():
    counts = {n: len(plan_units(prepared(n, 500))) for n in (1_000, 8_000, 84_000, 840_000)}
    assert counts == {1_000: 2 * 2 * 3, 8_000: 16 * 2 * 3, 84_000: 16 * 2 * 3, 840_000: 16 * 2 * 3}
    units = plan_units(prepared(84_000, 500))
    assert {(u.arm.name, u.seed) for u in units} == {(f"arm{a}", s) for a in range(2) for s in (1, 2, 3)}
    assert all(u.n_items == unit_size(84_000, 500) == 5_250 for u in units)
    assert sorted({u.label for u in units}) == sorted(u.label for u in units)  # no label twice: no partition twice
