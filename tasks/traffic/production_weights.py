"""Production volume weights of a window: each tool's share of the turns that called a tool first.

Written as ``weights/<window>.json`` (``ProductionWeights``) so a run names the window that weighted it.
'none' (no tool called) is not a tool and is left out of the shares; its share of all turns is reported
beside them. A weights file is never overwritten: the same window measured again must give the same file.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from schemas.catalogue import NONE_LABEL
from schemas.taskset import ProductionWeights
from schemas.traffic import ProductionTurn, Window
from tasks.files.atomic_write import write_exclusive
from tasks.files.input_errors import InputError

DIGITS = 6


def first_tool_counts(turns: list[ProductionTurn]) -> Counter[str]:
    """Turns per first tool ('none' included), over the turns given."""
    return Counter(turn.first_tool for turn in turns)


def production_weights(counts: Counter[str], window: Window, source_name: str, known_tools: set[str]) -> ProductionWeights:
    """Shares of the known tools (rounded to 6 digits, summing to 1); 'none' and unknown tools left out."""
    tool_counts = {tool: n for tool, n in counts.items() if tool != NONE_LABEL and tool in known_tools and n > 0}
    total = sum(tool_counts.values())
    if total == 0:
        raise InputError.one(source_name, window.id, "window-has-traffic",
                             "no turn in the window called a tool of the task set's catalogues")
    ordered = sorted(tool_counts.items(), key=lambda item: (-item[1], item[0]))
    shares = {tool: round(n / total, DIGITS) for tool, n in ordered}
    largest = ordered[0][0]
    shares[largest] = round(shares[largest] + (1 - sum(shares.values())), DIGITS)
    n_all = sum(counts.values())
    return ProductionWeights(
        window=window.id,
        source=(f"{source_name}: first tool called per turn, {window.start:%Y-%m-%d}..{window.end:%Y-%m-%d} "
                f"(end exclusive); {total:,} turns with a tool, {counts.get(NONE_LABEL, 0):,} of {n_all:,} with none "
                "(left out of the shares)"),
        weights=shares,
    )


def weights_path(taskset_dir: Path, window_id: str) -> Path:
    return Path(taskset_dir) / "weights" / f"{window_id}.json"


def weights_bytes(weights: ProductionWeights) -> bytes:
    return (json.dumps(weights.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n").encode()


def check_weights_writable(taskset_dir: Path, weights: ProductionWeights) -> bool:
    """True when the file already holds exactly these weights; raises when it holds others."""
    path = weights_path(taskset_dir, weights.window)
    if not path.is_file():
        return False
    existing = ProductionWeights.model_validate_json(path.read_bytes())
    if existing != weights:
        raise InputError.one(str(path), "", "weights-immutable",
                             f"weights for window {weights.window} already exist and differ from the ones measured now "
                             "(another log or another source). Weights files are never overwritten: choose another "
                             "window or move the old file away knowingly.")
    return True


def write_weights(taskset_dir: Path, weights: ProductionWeights) -> Path:
    """Write the weights file unless an identical one is there (exclusive create: safe with other writers)."""
    path = weights_path(taskset_dir, weights.window)
    if check_weights_writable(taskset_dir, weights):
        return path
    if not write_exclusive(path, weights_bytes(weights)):
        check_weights_writable(taskset_dir, weights)
    return path
