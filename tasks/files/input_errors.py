"""The one error type for bad input: it names the file, the line or id, and the rule broken."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Problem:
    """One broken rule at one place."""

    file: str
    where: str
    """'line 12', 'id sup-e-004', 'arm r2', or '' when the whole file is at fault."""
    rule: str
    message: str

    def __str__(self) -> str:
        place = f"{self.file}:{self.where}" if self.where else self.file
        return f"{place}: [{self.rule}] {self.message}"


@dataclass
class InputError(Exception):
    """Raised before any model call and before anything is written to the warehouse."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        shown = self.problems[:20]
        more = len(self.problems) - len(shown)
        lines = [str(p) for p in shown] + ([f"... and {more} more"] if more > 0 else [])
        return "\n".join(lines)

    @classmethod
    def one(cls, file: str, where: str, rule: str, message: str) -> "InputError":
        return cls([Problem(file, where, rule, message)])
