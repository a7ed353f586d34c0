"""Tool calls written as text: markup a model (or its server's chat template) put in the reply's text
instead of a structured tool call.

Self-hosted servers often fail to parse a model's call and hand back the raw markup as text, with no
``tool_calls``: llama-cpp-python's ``chatml-function-calling`` returns ``functions.refund_order:``, Qwen /
Hermes templates ``<tool_call>{"name": ...}</tool_call>``, Llama 3.1 ``<function=name>{...}</function>``,
Mistral ``[TOOL_CALLS] [...]``. Such a reply is not 'none' (the model tried to call a tool) and not a call
(nothing structured was returned, nothing could be executed): the row is *invalid* with the detail
``TEXT_CALL_DETAIL`` (its own failure detail, counted apart in the report's failure table), keeping the
tool named in the markup in ``chosen`` when one can be read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

TEXT_CALL_DETAIL = "tool call written as text"
"""The start of an invalid row's detail when the reply's text held tool-call markup."""

_FUNCTIONS_PREFIX = re.compile(r"^\s*functions\.([A-Za-z_][\w.\-]*)\s*:", re.MULTILINE)
_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FUNCTION_TAG = re.compile(r"<function=([A-Za-z_][\w.\-]*)>")
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*(.*)", re.DOTALL)


@dataclass(frozen=True)
class TextCall:
    markup: str
    """Which markup was found, as it appeared (shortened)."""
    name: str | None
    """The tool the markup names, when it could be read."""


def _name_in_json(text: str) -> str | None:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        match = re.search(r'"name"\s*:\s*"([^"]+)"', text)
        return match.group(1) if match else None
    if isinstance(parsed, list) and parsed:
        parsed = parsed[0]
    if isinstance(parsed, dict):
        function = parsed.get("function")
        name = parsed.get("name") or (function.get("name") if isinstance(function, dict) else None)
        return name if isinstance(name, str) else None
    return None


def find_text_call(text: str) -> TextCall | None:
    """The tool-call markup in a reply's text, or None when it reads as a plain answer."""
    if not text:
        return None
    if match := _FUNCTIONS_PREFIX.search(text):
        return TextCall(match.group(0).strip()[:80], match.group(1))
    if match := _TOOL_CALL_TAG.search(text):
        return TextCall("<tool_call>", _name_in_json(match.group(1)))
    if match := _FUNCTION_TAG.search(text):
        return TextCall(match.group(0)[:80], match.group(1))
    if match := _MISTRAL.search(text):
        return TextCall("[TOOL_CALLS]", _name_in_json(match.group(1).strip()))
    return None


def text_call_detail(found: TextCall) -> str:
    named = f", naming '{found.name}'" if found.name else ""
    return f"{TEXT_CALL_DETAIL} ({found.markup}{named}), not a structured tool call"
