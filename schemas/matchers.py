"""Matchers: one comparison of a value, shared by the task instrument's assertions (schemas/surface/task.py)
and a labelled request's expected arguments (schemas/expected_arguments.py).

Written in a file either as a literal (equality) or as an object with exactly one of these keys:
``equals``, ``contains``, ``regex``, ``one_of``, ``absent`` (docs/surface/writing-tasks.md says what each does).
"""

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

MatcherKind = Literal["equals", "contains", "regex", "one_of", "absent"]
MATCHER_KINDS: tuple[str, ...] = ("equals", "contains", "regex", "one_of", "absent")

class Matcher(BaseModel):
    """One comparison of a value: equals / contains / regex / one_of / absent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: MatcherKind = Field(description="How the value is compared.")
    value: Any = Field(default=None, description="What it is compared with (the string, pattern, list, ...).")

    @model_validator(mode="before")
    @classmethod
    def _from_task_file(cls, data: Any) -> Any:
        """A literal means equality; ``{"contains": "x"}`` and the like name their kind."""
        if isinstance(data, Matcher):
            return data
        if isinstance(data, dict) and set(data) == {"kind", "value"} and data["kind"] in MATCHER_KINDS:
            return data
        if isinstance(data, dict) and len(data) == 1 and next(iter(data)) in MATCHER_KINDS:
            kind, value = next(iter(data.items()))
            return {"kind": kind, "value": value}
        if isinstance(data, dict) and len(data) == 1:
            raise ValueError(f"unknown matcher '{next(iter(data))}' (matchers: {', '.join(MATCHER_KINDS)}); "
                             f"to compare with a one-key object, write {{\"equals\": {{...}}}}")
        if isinstance(data, dict) and (named := sorted(set(data) & set(MATCHER_KINDS))):
            raise ValueError(f"one matcher per value: {', '.join(named)} stand beside other keys; "
                             f"to compare with such an object, write {{\"equals\": {{...}}}}")
        return {"kind": "equals", "value": data}

    @model_validator(mode="after")
    def _value_fits_kind(self) -> "Matcher":
        if self.kind == "contains" and not isinstance(self.value, (str, int, float, bool)):
            raise ValueError("'contains' takes a string (substring, or element of a list)")
        if self.kind == "regex":
            if not isinstance(self.value, str):
                raise ValueError("'regex' takes a pattern string")
            try:
                re.compile(self.value)
            except re.error as error:
                raise ValueError(f"'regex' pattern does not compile: {error}") from None
        if self.kind == "one_of" and (not isinstance(self.value, list) or not self.value):
            raise ValueError("'one_of' takes a non-empty list")
        if self.kind == "absent" and self.value is not True:
            raise ValueError("'absent' takes true")
        return self

    @model_serializer(mode="plain")
    def _as_task_file(self) -> Any:
        return {self.kind: self.value}

    def describe(self) -> str:
        return f"{self.kind} {self.value!r}" if self.kind != "absent" else "absent"
