"""The offline baseline agent: a lexical router and schema-guided argument filling. Not an LLM.

Each turn the router scores the offered tools against the request plus the field names of the last result;
the best tool above its threshold whose required arguments it can fill is called (``fill_argument``: from
earlier results, the request, the schema and the task's fixtures; a path or an id is never the request's
text), unless that call already succeeded (then it is done). A call it makes without a required argument says
so (``ProposedCall.unfilled``) and is invalid. It does not read the prompt. With ``position_bias: b`` its first
call moves to the first-offered tool as the ``position_biased`` selector's pick does
(``tasks/selectors/routers/position_biased.py``). docs/surface/agents.md says all of it."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

import numpy as np

from schemas.catalogue import ToolSpec
from schemas.surface.task import SurfaceTask
from schemas.taskset import Message
from tasks.selectors.base import SelectionInput
from tasks.selectors.routers.lexical import LexicalSelector
from tasks.selectors.offline import offline_selector
from tasks.selectors.routers.position_biased import move_probability, order_draw
from tasks.selectors.routers.router_scores import tool_name_words
from tasks.surface.agent_loop import retry_key
from tasks.surface.agent_types import AgentTurn, ProposedCall, ToolResult

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
PATH = re.compile(r"(?<![\w@])(?:[\w.-]+/)+[\w.-]*[\w-]|(?<![\w@/.])[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}(?![\w@.])")
"""A file path in a request: words joined by '/', or a file name with an extension (not an email)."""
PATH_NAMES = ("path", "file", "filename", "directory", "dir", "folder", "source", "destination", "target")
SECOND_PATH_NAMES = ("destination", "target", "new_path", "to")
NUMBER = re.compile(r"\b\d+\b")
WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("a an and are be can do does for from has have how i in is it me my of on or please the to "
                      "what when where which who why with you your".split())
TITLE_NAMES = ("subject", "title", "summary", "headline")
TITLE_CHARS = 80
GAVE_UP = "I could not complete this request with the tools offered."
REPOSITORY_NAMES = ("repo_path", "repository", "repo", "repository_path", "repo_dir")


def fixture_repositories(fixtures: Mapping[str, Any] | None) -> list[str]:
    """Folders of the task's fixture files that hold a ``.git`` folder, as the fixtures name them ('.' for the
    state folder itself), in the order the fixtures list them."""
    files = (fixtures or {}).get("files")
    found: list[str] = []
    for path in files if isinstance(files, dict) else ():
        parts = str(path).split("/")
        if ".git" in parts[:-1]:
            folder = "/".join(parts[:parts.index(".git")]) or "."
            if folder not in found:
                found.append(folder)
    return found


def _records_with(value: Any, key: str, out: list[dict]) -> None:
    if isinstance(value, dict):
        if not isinstance(value.get(key), (dict, list, type(None))):
            out.append(value)
        for inner in value.values():
            _records_with(inner, key, out)
    elif isinstance(value, list):
        for inner in value:
            _records_with(inner, key, out)


def fixture_id(name: str, fixtures: Mapping[str, Any] | None, request_words: set[str]) -> Any:
    """The id (the value under ``name``, else under ``id``) of the fixture record sharing most words with the
    request (ties: the first), or None when no record shares a word: an id is read, never invented."""
    for key in dict.fromkeys((name, "id")):
        records: list[dict] = []
        _records_with({k: v for k, v in (fixtures or {}).items() if k != "include"}, key, records)
        overlaps = [len(_text_words(r) & request_words) for r in records]
        if records and max(overlaps) > 0:
            return records[overlaps.index(max(overlaps))][key]
    return None


def _is_id(name: str) -> bool:
    return name.lower() == "id" or name.lower().endswith("_id")


def _words_of_keys(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            out.append(tool_name_words(str(key)))
            _words_of_keys(inner, out)
    elif isinstance(value, list) and value:
        _words_of_keys(value[0], out)


def result_hint(result: Any) -> str:
    """The words of a result's field names (first record of each list), for the router."""
    words: list[str] = []
    _words_of_keys(result, words)
    return " ".join(dict.fromkeys(words))


def _text_words(value: Any) -> set[str]:
    if isinstance(value, (dict, list)):
        return set().union(*map(_text_words, value.values() if isinstance(value, dict) else value))
    return set(WORD.findall(str(value).lower())) - STOPWORDS


def find_key(value: Any, key: str, request_words: set[str] = frozenset()) -> Any:
    """The value under ``key`` in a result, depth first. In a list of records, the record sharing the most
    words with the request is read (ties: the first); when none shares a word and the list has more pages
    (``has_more``), nothing is read: the right record may be on the next page."""
    if isinstance(value, dict):
        if key in value and not isinstance(value[key], (dict, list)) and value[key] is not None:
            return value[key]
        for inner in value.values():
            if isinstance(inner, list) and inner and all(isinstance(r, dict) for r in inner):
                overlaps = [len(_text_words(r) & request_words) for r in inner]
                best = max(range(len(inner)), key=lambda i: (overlaps[i], -i))
                if overlaps[best] == 0 and value.get("has_more"):
                    continue
                found = find_key(inner[best], key, request_words)
            else:
                found = find_key(inner, key, request_words)
            if found is not None:
                return found
    elif isinstance(value, list):
        for inner in value[:1]:
            found = find_key(inner, key, request_words)
            if found is not None:
                return found
    return None


def _unanchored(pattern: str) -> str:
    return pattern.removeprefix("^").removesuffix("$")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def fill_argument(name: str, schema: Mapping[str, Any], request: str, results: Sequence[Any],
                  fixtures: Mapping[str, Any] | None = None) -> Any:
    """A value for one parameter, or None when the agent has none, looked for in the order written below."""
    kind = schema.get("type")
    if "cursor" in name:
        last = results[-1] if results else None
        if isinstance(last, dict) and last.get("has_more") and last.get("next_cursor"):
            return last["next_cursor"]
        return None
    request_words = _text_words(request)
    for result in reversed(results):
        found = find_key(result, name, request_words)
        if found is not None and (kind is None or isinstance(found, _PYTHON_TYPES.get(kind, object))):
            return found
    if isinstance(schema.get("enum"), list):
        lowered = request.lower()
        for option in schema["enum"]:
            if isinstance(option, str) and tool_name_words(option) in lowered:
                return option
        return schema.get("default")
    if kind in ("string", None) and name.lower() in REPOSITORY_NAMES and (found := fixture_repositories(fixtures)):
        return found[0]
    if kind in ("string", "integer", None) and _is_id(name) and not schema.get("pattern"):
        found = fixture_id(name, fixtures, request_words)  # an id is read, never the request's text
        return found if isinstance(found, _PYTHON_TYPES.get(kind or "", object)) else schema.get("default")
    if isinstance(schema.get("pattern"), str) and "slug" not in name:
        match = re.search(_unanchored(schema["pattern"]), request)
        return match.group(0) if match else None  # an id-shaped value is not invented
    if schema.get("format") == "email" or "email" in name:
        match = EMAIL.search(request)
        return match.group(0) if match else None
    if kind == "string" and (name.lower() in PATH_NAMES or name.lower().endswith("path")):
        paths = PATH.findall(request)
        index = 1 if name.lower() in SECOND_PATH_NAMES else 0
        if len(paths) > index:
            return paths[index]
        return schema.get("default")  # a path is read, never the request's text
    if kind == "array" and name.lower() in ("paths", "files") and PATH.findall(request):
        return PATH.findall(request)
    if "default" in schema:
        return schema["default"]
    if kind in ("integer", "number"):
        match = NUMBER.search(request)
        return int(match.group(0)) if match else None
    if kind == "boolean":
        return False
    if kind == "string":
        if "slug" in name:
            return _slug(request)
        if any(word in name for word in TITLE_NAMES):
            return request[:TITLE_CHARS]
        return request
    return None


_PYTHON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
                                 "array": list, "object": dict}


def fill_arguments(tool: ToolSpec, request: str, results: Sequence[Any], fixtures: Mapping[str, Any] | None = None
                   ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(arguments, the required ones it has no value for: empty when every one was filled)."""
    properties = tool.parameters.get("properties") or {}
    required = list(tool.parameters.get("required") or [])
    arguments: dict[str, Any] = {}
    for name, schema in properties.items():
        value = fill_argument(name, schema if isinstance(schema, dict) else {}, request, results, fixtures)
        if value is None:
            continue
        if name not in required and value == (schema or {}).get("default"):
            continue  # an optional argument at its default is left to the tool
        arguments[name] = value
    return arguments, tuple(name for name in required if name not in arguments)


class BaselineSession:
    """One task's run: what the agent has called and seen."""

    def __init__(self, agent: "BaselineAgent", task: SurfaceTask, tools: tuple[ToolSpec, ...],
                 fixtures: Mapping[str, Any] | None = None):
        self.agent, self.task, self.tools, self.fixtures = agent, task, tools, fixtures
        self.request = task.text
        self.results: list[Any] = []
        """Parsed results of the calls that ran without being refused, oldest first."""
        self.last: Any = None
        self.made: set[str] = set()
        self.succeeded: set[str] = set()
        self.pending: ProposedCall | None = None
        self.n = 0

    def _scores(self) -> np.ndarray:
        # the last result's field names count twice: after a call, what came back says most about what next
        hint = result_hint(self.last) if self.last is not None else ""
        query = f"{self.request}\n{hint}\n{hint}" if hint else self.request
        item = SelectionInput(request_id=self.task.id, messages=(Message(role="user", content=query),),
                              tools=self.tools, prompt="")
        scores = self.agent.router.scores([item])[0]
        return np.zeros(len(self.tools)) if scores is None else scores

    def next_turn(self) -> AgentTurn:
        scores = self._scores()
        order = sorted(range(len(self.tools)), key=lambda i: (-scores[i], i))  # ties: the offered order
        fallback: ProposedCall | None = None
        for index in order:
            if scores[index] < self.agent.threshold:
                break
            tool = self.tools[index]
            arguments, missing = fill_arguments(tool, self.request, self.results, self.fixtures)
            key = retry_key(tool.name, arguments)
            if key in self.succeeded:
                return self._reply()  # its best idea is a call it already made: done
            if key in self.made:
                continue
            if missing:
                if fallback is None:
                    fallback = ProposedCall("", tool.name, json.dumps(arguments), unfilled=missing)
                continue
            return self._call(tool.name, arguments)
        if fallback is not None:  # nothing it can fill: try the best tool anyway (an invalid call, saying why)
            return self._call(fallback.name, json.loads(fallback.arguments), fallback.unfilled)
        return self._reply()

    def _call(self, name: str, arguments: dict[str, Any], unfilled: tuple[str, ...] = ()) -> AgentTurn:
        if self.n == 0 and self.agent.position_bias > 0:
            name, arguments, unfilled = self._biased_first(name, arguments, unfilled)
        self.made.add(retry_key(name, arguments))
        self.n += 1
        self.pending = ProposedCall(f"call_{self.n}", name, json.dumps(arguments), unfilled=unfilled)
        return AgentTurn(calls=[self.pending])

    def _biased_first(self, name: str, arguments: dict[str, Any], unfilled: tuple[str, ...]
                      ) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        """The first call, moved to the first-offered tool with the ``position_biased`` selector's probability."""
        names = [tool.name for tool in self.tools]
        chance = move_probability(names.index(name) + 1, len(names), self.agent.position_bias)
        if order_draw(self.task.model_dump_json(by_alias=True), names) >= chance:
            return name, arguments, unfilled
        return (names[0], *fill_arguments(self.tools[0], self.request, self.results, self.fixtures))

    def _reply(self) -> AgentTurn:
        if self.results:
            return AgentTurn(text=json.dumps(self.results[-1], ensure_ascii=False))
        return AgentTurn(text=GAVE_UP)

    def feed(self, results: Sequence[ToolResult]) -> None:
        for result in results:
            try:
                parsed = json.loads(result.content)
            except json.JSONDecodeError:
                parsed = result.content
            if result.is_error:
                self.last = None  # a refusal or an invalid call: route on the request alone next
                continue
            self.last = parsed
            self.results.append(parsed)
            if self.pending is not None and result.call_id == self.pending.call_id:
                self.succeeded.add(retry_key(self.pending.name, self.pending.arguments))


class BaselineAgent:
    """The offline agent of an arm (``agent: baseline``); options: ``router_options`` for the lexical router,
    ``threshold`` (default: the router's abstain threshold), ``position_bias`` (default 0)."""

    kind = "baseline"
    reads_prompt = False
    reads_fixtures = True
    """It is given the task's merged fixtures (``start(..., fixtures=)``): repository paths and ids come from them."""

    def __init__(self, model_id: str, options: Mapping[str, Any] | None = None):
        options = dict(options or {})
        self.model_id = model_id
        router_options = dict(options.get("router_options") or {})
        self.router: LexicalSelector = offline_selector("lexical", "bm25-okapi", router_options)  # type: ignore[assignment]
        self.threshold = float(options.get("threshold", self.router.abstain_threshold))
        self.position_bias = float(options.get("position_bias", 0.0))

    def start(self, task: SurfaceTask, tools: tuple[ToolSpec, ...], prompt: str,
              fixtures: Mapping[str, Any] | None = None) -> BaselineSession:
        return BaselineSession(self, task, tools, fixtures)
