"""The suite's module order (tests/longest_first.py): every module it names exists, once; the named modules
start first, in their order, then the other modules with a slow test, then the rest."""

from __future__ import annotations

from pathlib import Path

from tests.longest_first import LONGEST_FIRST, module_rank

ROOT = Path(__file__).resolve().parents[1]


def test_every_named_module_exists_once():
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    missing = [module for module in LONGEST_FIRST if not (ROOT / module).is_file()]
    assert missing == [], "a module was moved or renamed: name its new path in tests/longest_first.py"


def test_named_modules_first_in_their_order_then_slow_ones_then_the_rest():
    first, second = LONGEST_FIRST[0], LONGEST_FIRST[1]
    nodeids = ["tests/a/test_fast.py::test_x", "tests/b/test_slowish.py::test_y", f"{second}::test_z",
               f"{first}::test_w[1]"]
    ranked = sorted(nodeids, key=lambda nodeid: module_rank(nodeid, {"tests/b/test_slowish.py"}))
    assert ranked == [f"{first}::test_w[1]", f"{second}::test_z", "tests/b/test_slowish.py::test_y",
                      "tests/a/test_fast.py::test_x"]
