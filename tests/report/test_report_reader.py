"""What ``tooleval report`` takes of an instrument (tasks/instrument_registry.py ``report_reader``) is the
instrument's own figures and report tables: the same functions its ``Instrument`` declares, found through its
card without importing it."""

from __future__ import annotations

import pytest

from tasks.instrument_api import called, instrument
from tasks.instrument_registry import INSTRUMENTS, card, report_reader


@pytest.mark.parametrize("name", sorted(INSTRUMENTS))
def test_the_report_reader_is_the_instruments_figures_and_tables(name):
    reader, kind = report_reader(name), instrument(name)
    assert reader.name == kind.name == name
    assert called(reader.load_figures) is called(kind.load_figures)
    assert called(reader.build_report) is called(kind.build_report)


@pytest.mark.parametrize("name", sorted(INSTRUMENTS))
def test_an_instruments_card_is_the_one_its_instrument_carries(name):
    assert instrument(name).card is card(name) and card(name).name == name
    assert set(card(name).row_models()) >= set(card(name).store.run_tables)
