"""Mask personal data in request texts before anything is written: e-mails, card numbers, order ids and
gift-card codes (when configured), phone numbers, street addresses, postcodes and the name in a sign-off
become ``[EMAIL]``, ``[CARD]``, ``[ORDER_ID]``, ``[GIFT_CARD]``, ``[PHONE]``, ``[ADDRESS]``, ``[NAME]``.

Order of the rules matters and is fixed: e-mails, configured patterns (order ids, gift cards, extras), card
numbers (13-19 digits passing the Luhn check, or four groups of four), phone numbers (10-15 digits, or a
leading '+'), street addresses, postcodes, sign-off names. A masked placeholder has no digits, so no later
rule re-matches it. Configured patterns match regardless of case (people type ``nw-5502917``). A sign-off is
a configured closing phrase followed by one or two words: at the end of a message, after a comma, dash or
colon any words ('thanks, tom'), else only capitalised ones ('Cheers Maria'); anywhere else in the message,
after a comma, dash or colon, capitalised words ('Kind regards, Ellen you can call me on ...': a message
goes on after its sign-off when a tail was pasted in); 'thanks in advance' and 'Thanks, I ...' are left.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable

from schemas.taskset import Message
from schemas.traffic import MaskingRules, ProductionTurn
from tasks.files.input_errors import InputError

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,5}\)[ .-]?)?\d[\d .-]{5,16}\d(?![\w-])|\b555[ .-]01\d\d\b")
_STREET_SUFFIX = (r"street|st|road|rd|lane|ln|avenue|ave|close|drive|dr|way|court|ct|place|pl|crescent|terrace|"
                  r"gardens|grove|square|sq|boulevard|blvd|row|mews|hill|parade|walk")
_UK_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}"
STREET = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?,?\s+(?:[A-Za-z][A-Za-z'’-]+\s+){{1,3}}(?:{_STREET_SUFFIX})\b\.?"
    r"(?:,?\s*(?:apt|apartment|flat|unit|suite)\.?\s*#?\w+)?"
    rf"(?:,\s*[A-Za-z][A-Za-z' -]{{1,30}}?)?(?:,?\s*(?:{_UK_POSTCODE}|[A-Z]{{2}}\s+\d{{5}}(?:-\d{{4}})?))?(?![\w])",
    re.IGNORECASE,
)
POSTCODE = re.compile(rf"\b(?:{_UK_POSTCODE})\b|\bPO Box \d+\b", re.IGNORECASE)
_NOT_NAMES = {"again", "all", "bye", "everyone", "team", "guys", "so", "much", "a", "lot", "in", "advance", "for",
              "you", "pls", "please", "asap", "ty", "x", "xx"}
_NOT_NAMES_INSIDE = {"i", "i'm", "i've", "i'll", "i'd", "the", "my", "it", "it's", "we", "this", "that", "your", "our",
                     "and", "but", "can", "could", "would", "will", "is", "are", "do", "did", "have", "has", "what",
                     "when", "where", "why", "how", "if", "also", "ok", "okay", "no", "yes", "hi", "hello", "hey",
                     "sorry", "just", "not", "there", "here", "they", "he", "she", "me", "us", "order", "northwind"}
"""Capitalised words that start a sentence rather than sign a message, for a sign-off inside a message."""


def sign_off_pattern(phrases: list[str]) -> re.Pattern[str]:
    """A closing phrase, a separator, then one or two name words, at the end of the text (after the name
    only punctuation, spaces or an emoji may follow)."""
    alternatives = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in sorted(phrases, key=len, reverse=True))
    name = r"[^\W\d_][\w'’-]*"
    return re.compile(rf"(?i:\b(?:{alternatives}))(?P<sep>\s*[,:\-–—]\s*|\s+)(?P<name>{name}(?:\s+{name})?)"
                      r"(?=[\s.!?…]*\W{0,3}\s*$)")


def sign_off_inside_pattern(phrases: list[str]) -> re.Pattern[str]:
    """A closing phrase, a comma, dash or colon, then one or two capitalised name words, anywhere in the text
    (the end-of-text pattern runs first: this one catches a sign-off that text follows)."""
    alternatives = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in sorted(phrases, key=len, reverse=True))
    name = r"[^\W\d_a-z][\w'’-]*"
    return re.compile(rf"(?i:\b(?:{alternatives}))(?P<sep>\s*[,:\-–—]\s*)(?P<name>{name}(?:\s+{name})?)(?![\w'’-])")


def _name_inside(match: re.Match[str]) -> tuple[int, int] | None:
    """The span of the name a sign-off inside a message gives: its first word, and the second when that is a
    name too ('Kind regards, Ellen Reid ...'), not a word that starts the next sentence ('Ellen I live at')."""
    words = list(re.finditer(r"\S+", match.group("name")))
    if words[0].group(0).lower() in _NOT_NAMES | _NOT_NAMES_INSIDE:
        return None
    last = words[-1] if words[-1].group(0).lower() not in _NOT_NAMES | _NOT_NAMES_INSIDE else words[0]
    start = match.start("name")
    return start + words[0].start(), start + last.end()


def _accept_sign_off(match: re.Match[str]) -> bool:
    words = match.group("name").split()
    if any(w.lower() in _NOT_NAMES for w in words):
        return False
    return bool(match.group("sep").strip()) or all(w[0].isupper() for w in words)


def _name_at_end(match: re.Match[str]) -> tuple[int, int] | None:
    return match.span("name") if _accept_sign_off(match) else None


_DATE_LIKE = re.compile(r"^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$")


def luhn_valid(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for index, char in enumerate(digits):
        value = int(char)
        if index % 2 == parity:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


_GROUPED_CARD = re.compile(r"^\d{4}([ -])\d{4}\1\d{4}\1\d{4}$")


def _is_card(text: str) -> bool:
    """Luhn-valid 13-19 digits, or written like a card (four groups of four): a mistyped card is still one."""
    digits = re.sub(r"\D", "", text)
    return 13 <= len(digits) <= 19 and (luhn_valid(digits) or bool(_GROUPED_CARD.match(text)))


def _is_phone(text: str) -> bool:
    if _DATE_LIKE.match(text.strip()):
        return False
    digits = re.sub(r"\D", "", text)
    if text.startswith("555") and len(digits) == 7:
        return True
    return 10 <= len(digits) <= 15 or (text.startswith("+") and 8 <= len(digits) <= 15)


class Masker:
    """Compiled masking rules; ``mask`` returns the masked text and counts what it masked by kind."""

    def __init__(self, rules: MaskingRules):
        self.rules = rules
        steps: list[tuple[str, re.Pattern[str], Callable[[str], bool] | None]] = []
        if rules.emails:
            steps.append(("EMAIL", EMAIL, None))
        for label, patterns in ([("ORDER_ID", rules.order_ids), ("GIFT_CARD", rules.gift_cards)]
                                + [(k.upper(), [v]) for k, v in rules.extra.items()]):
            for pattern in patterns:
                try:
                    steps.append((label, re.compile(pattern, re.IGNORECASE), None))
                except re.error as error:
                    raise InputError.one("masking", label.lower(), "masking-pattern",
                                         f"'{pattern}' is not a regular expression: {error}") from None
        if rules.cards:
            steps.append(("CARD", CARD, _is_card))
        if rules.phones:
            steps.append(("PHONE", PHONE, _is_phone))
        if rules.addresses:
            steps.append(("ADDRESS", STREET, None))
            steps.append(("ADDRESS", POSTCODE, None))
        signs = rules.sign_offs and rules.sign_off_phrases
        self.sign_off = sign_off_pattern(rules.sign_off_phrases) if signs else None
        self.sign_off_inside = sign_off_inside_pattern(rules.sign_off_phrases) if signs else None
        self.steps = steps

    def mask(self, text: str, counts: Counter[str] | None = None) -> str:
        for label, pattern, accept in self.steps:
            def replace(match: re.Match[str], label: str = label, accept=accept) -> str:
                if accept is not None and not accept(match.group(0)):
                    return match.group(0)
                if counts is not None:
                    counts[label.lower()] += 1
                return f"[{label}]"

            text = pattern.sub(replace, text)
        if self.sign_off is not None:
            text = self.sign_off.sub(lambda m: self._mask_name(m, counts, _name_at_end), text)
            text = self.sign_off_inside.sub(lambda m: self._mask_name(m, counts, _name_inside), text)
        return text

    @staticmethod
    def _mask_name(match: re.Match[str], counts: Counter[str] | None,
                   name_span: Callable[[re.Match[str]], tuple[int, int] | None]) -> str:
        span = name_span(match)
        if span is None:
            return match.group(0)
        if counts is not None:
            counts["name"] += 1
        start, end = span
        whole = match.group(0)
        return whole[:start - match.start()] + "[NAME]" + whole[end - match.start():]

    def mask_messages(self, messages: tuple[Message, ...], counts: Counter[str] | None = None) -> tuple[Message, ...]:
        return tuple(Message(role=m.role, content=self.mask(m.content, counts)) for m in messages)

    def mask_turn(self, turn: ProductionTurn, counts: Counter[str] | None = None) -> ProductionTurn:
        """The turn with every message masked (the only form a turn leaves the reader in)."""
        return turn.model_copy(update={
            "user_message": self.mask(turn.user_message, counts),
            "earlier_turns": self.mask_messages(turn.earlier_turns, counts),
        })
