"""The toy instrument's ``Instrument``, from its parts."""

from __future__ import annotations

from schemas.criteria import CriteriaFile
from tasks.instrument_api import Instrument, Words
from tests.run.toy_instrument import parts
from tests.run.toy_instrument.card import CARD

INSTRUMENT = Instrument(
    name="toy", card=CARD, experiment_file=parts.ToyExperimentFile, criteria_file=CriteriaFile,
    respects=("rule", "prompt", "model", "version"), arm_fields=("rule", "prompt", "model"),
    run_record=parts.ToyRunRecord, words=Words(items="rows", ok="guessed right", failed="not guessed"),
    resolve_arm=parts.resolve_toy_arm, load=parts.load_toy_versions, work_items=lambda version: version.numbers,
    run_unit=parts.guess_and_land, arm_record=parts.arm_record,
    load_figures=parts.load_toy_figures, judges={}, build_report=parts.build_toy_report,
    check_lines=lambda found: [f"{found} numbers"])
