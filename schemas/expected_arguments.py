"""Expected arguments of a labelled request: per parameter of its right tool, a matcher (schemas/matchers.py)
and how it is applied. Written on a request line as ``expected_arguments``, parameter name -> a literal
(equality) or a matcher object, with these options beside the matcher's key::

    "expected_arguments": {
        "order_id": "A-1001",
        "reason": {"one_of": ["damaged", "late"]},
        "amount": {"equals": 12.5, "tolerance": 0.01},
        "note": {"absent": true},
        "unit": {"one_of": ["celsius", "fahrenheit"], "may_be_omitted": true},
        "city": {"one_of": ["New York, NY"], "text": "standardised"}
    }

- ``may_be_omitted``: leaving the parameter out is right too (BFCL's "" among the acceptable values);
- ``tolerance``: numbers within it of an ``equals`` / ``one_of`` value match;
- ``text``: ``exact`` (default) or ``standardised``: strings (also inside lists and objects) compared as
  BFCL's checker compares them, lower case with spaces and ``,./-_*^`` removed.

A parameter left unnamed is free. To compare with an object holding one of the option names, write
``{"equals": {...}}``.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from schemas.matchers import MATCHER_KINDS, Matcher

ARGUMENT_OPTIONS: tuple[str, ...] = ("may_be_omitted", "tolerance", "text")
"""Keys that may stand beside a matcher's key in an expected argument."""


class ExpectedArgument(BaseModel):
    """What one parameter of the right tool's call must hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    matcher: Matcher = Field(description="The comparison the value must pass.")
    may_be_omitted: bool = Field(default=False, description="Leaving the parameter out is right too.")
    tolerance: float | None = Field(
        default=None, ge=0, description="Numbers within this of an equals / one_of value match.")
    text: Literal["exact", "standardised"] = Field(
        default="exact", description="How strings compare: exactly, or as BFCL's checker does (case, spaces "
        "and ,./-_*^ ignored).")

    @model_validator(mode="before")
    @classmethod
    def _from_request_file(cls, data: Any) -> Any:
        """A literal or a bare matcher; options beside a matcher's key are split off."""
        if isinstance(data, ExpectedArgument) or (isinstance(data, dict) and "matcher" in data):
            return data
        if isinstance(data, dict) and set(data) & set(MATCHER_KINDS) and set(data) & set(ARGUMENT_OPTIONS):
            options = {key: value for key, value in data.items() if key in ARGUMENT_OPTIONS}
            return {"matcher": {key: value for key, value in data.items() if key not in ARGUMENT_OPTIONS},
                    **options}
        return {"matcher": data}

    @model_validator(mode="after")
    def _options_fit(self) -> "ExpectedArgument":
        if self.tolerance is not None and self.matcher.kind not in ("equals", "one_of"):
            raise ValueError("'tolerance' applies to an equals or one_of matcher")
        if self.may_be_omitted and self.matcher.kind == "absent":
            raise ValueError("'may_be_omitted' beside 'absent' says nothing: write {\"absent\": true}")
        return self

    @model_serializer(mode="plain")
    def _as_request_file(self) -> Any:
        written: dict[str, Any] = {self.matcher.kind: self.matcher.value}
        if self.may_be_omitted:
            written["may_be_omitted"] = True
        if self.tolerance is not None:
            written["tolerance"] = self.tolerance
        if self.text != "exact":
            written["text"] = self.text
        return written


ExpectedArguments = dict[str, ExpectedArgument]
"""Parameter name -> what it must hold; parameters not named are free."""
