"""What ``tooleval report`` takes of an instrument (tasks/instruments.py ``report_reader``) is the instrument's own
figures and report tables: the same functions its ``Instrument`` declares, found without importing it."""

from __future__ import annotations

import pytest

from tasks.instruments import MODULES, REPORT_PARTS, instrument, report_reader


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_report_reader_is_the_instruments_figures_and_tables(name):
    reader, kind = report_reader(name), instrument(name)
    assert reader.name == kind.name == name
    assert reader.load_figures is kind.load_figures and reader.build_report is kind.build_report


def test_every_instrument_has_a_report_reader():
    assert set(REPORT_PARTS) == set(MODULES)
