"""Options of hosted-model arms (openai / anthropic): names, defaults, keys, and the checks made when an
experiment is resolved — before any call and before anything is written.

Every answer-changing default is written into the arm's options at resolution (temperature, provider
seed, max_tokens, the endpoint), so the selection cache key (``plan_units.selector_fingerprint``) holds
the values actually sent, and a change of endpoint (``OPENAI_BASE_URL``) is a change of key.

API keys come only from the environment (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``, or the variable an
arm names in ``api_key_env``) or from a file a secrets manager mounts (``api_key_file``, e.g.
``/run/secrets/openai``). They are read when the client is built and never copied into options, rows,
logs or reports.

Arm options (all optional unless said):

- chat: ``base_url``, ``api_key_env``, ``api_key_file``, ``temperature`` (openai default 0; ``null`` leaves
  it out), ``provider_seed`` (openai, default 0), ``max_tokens`` (1024), ``legacy_max_tokens`` (openai: send
  the limit as ``max_tokens``, not ``max_completion_tokens``, which llama-cpp-python ignores),
  ``tool_choice`` (``auto`` / ``required`` / ``none``, sent on every call a route does not force and on every
  turn of a task agent; unset: no tool_choice is sent, which llama-cpp-python reads as "no tools"),
  ``reasoning_effort``, ``parallel_tool_calls``, ``api_version`` (anthropic), ``served_model``,
  ``model_revision`` / ``unpinned_reason`` (self-hosted ids without a date), ``prices``, ``price_file``;
- load: ``concurrency`` (8 calls in flight per endpoint and process), ``timeout_s`` (60), ``max_retries``
  (4), ``retry_base_delay_s`` (0.5), ``retry_max_delay_s`` (30), ``max_retry_after_s`` (120);
- send: ``batch`` (true: the chat requests go through the provider's batch API, ``batch_selection.py``; the
  arm's ``batch:`` field, else the experiment's or ``tooleval run --batch``, sets it), ``batch_poll_s`` (10:
  the first wait before asking whether a batch ended, growing 1.5x a poll up to 300);
- routing (see ``routed.py``): ``route`` (default / forced / gated / narrowed), ``router`` (lexical /
  embedding / trained / llm), ``router_model``, ``router_options``, ``threshold`` (gated), ``narrow_k`` (narrowed, 1);
- ``judge``: ``{model, selector (openai|anthropic), votes (3), temperature, ...chat options}``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlparse

from tasks.selectors.arm_options import KEY_OPTIONS, TRANSPORT_OPTIONS
from tasks.selectors.providers.anthropic_messages import DEFAULT_BASE_URL as ANTHROPIC_BASE_URL
from tasks.selectors.providers.anthropic_messages import SAMPLING_API_VERSION
from tasks.selectors.providers.openai_chat import DEFAULT_BASE_URL as OPENAI_BASE_URL
from tasks.selectors.providers.pinned_models import pinned_problem
from tasks.selectors.providers.pricing import price_for

HOSTED_KINDS = ("openai", "anthropic")
ROUTES = ("default", "forced", "gated", "narrowed")
ROUTERS = ("lexical", "embedding", "trained", "llm")

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
OFFICIAL_BASE_URL = {"openai": OPENAI_BASE_URL, "anthropic": ANTHROPIC_BASE_URL}
OFFICIAL_HOSTS = {"api.openai.com", "api.anthropic.com"}

DEFAULT_MAX_TOKENS = 1024
DEFAULT_CONCURRENCY = 8

PROVIDER_OPTIONS = frozenset({"base_url", "temperature", "provider_seed", "max_tokens", "legacy_max_tokens",
                              "reasoning_effort", "parallel_tool_calls", "api_version", "served_model",
                              "model_revision", "unpinned_reason"}) | TRANSPORT_OPTIONS
TOOL_CHOICES = ("auto", "required", "none")
ROUTING_OPTIONS = frozenset({"route", "router", "router_model", "router_options", "threshold", "narrow_k"})
CHAT_OPTIONS = PROVIDER_OPTIONS | ROUTING_OPTIONS | {"judge", "tool_choice"}
JUDGE_OPTIONS = PROVIDER_OPTIONS | {"model", "selector", "votes"}
LLM_ROUTER_OPTIONS = PROVIDER_OPTIONS | {"max_options"}


_SECRET_NAME = re.compile(r"(^|_)(api_?key|key|token|secret|password|auth)(_|$)", re.IGNORECASE)


def resolve_base_url(kind: str, options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    return str(options.get("base_url") or environ.get(BASE_URL_ENV[kind]) or OFFICIAL_BASE_URL[kind])


def provider_defaults(kind: str, options: Mapping[str, Any],
                      environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The answer-changing defaults, as ``check_hosted_arm`` writes them into an arm's options at resolution
    (applied again, idempotently, wherever a provider is called)."""
    filled = dict(options)
    filled.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    filled["base_url"] = resolve_base_url(kind, filled, environ)
    if kind == "openai":
        filled.setdefault("temperature", 0.0)
        filled.setdefault("provider_seed", 0)
    return filled


def is_custom_server(base_url: str) -> bool:
    return (urlparse(base_url).hostname or "") not in OFFICIAL_HOSTS


def key_source(kind: str, options: Mapping[str, Any]) -> str:
    """Where the key is read from, for messages (never the key itself)."""
    if options.get("api_key_file"):
        return f"the file {options['api_key_file']}"
    return f"${options.get('api_key_env') or DEFAULT_KEY_ENV[kind]}"


def read_api_key(kind: str, options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
    """The API key from the arm's key file or environment variable; None when there is none."""
    environ = os.environ if environ is None else environ
    if options.get("api_key_file"):
        path = Path(str(options["api_key_file"])).expanduser()
        try:
            key = path.read_text().strip()
        except OSError:
            return None
        return key or None
    key = environ.get(str(options.get("api_key_env") or DEFAULT_KEY_ENV[kind]), "").strip()
    return key or None


def _check_provider(kind: str, model_id: str, options: dict[str, Any], allowed: frozenset[str], what: str,
                    environ: Mapping[str, str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Checks shared by the chat model, the LLM router and the judge; returns options with defaults filled."""
    problems: list[tuple[str, str]] = []
    secrets = sorted(n for n in options if n not in KEY_OPTIONS and _SECRET_NAME.search(n))
    if secrets:
        problems.append(("secret-in-options", f"{what}: {', '.join(secrets)} in the experiment file: keys come only "
                                              f"from the environment ({key_source(kind, options)}) or api_key_file"))
    unknown = sorted(set(options) - allowed - set(secrets))
    if unknown:
        problems.append(("option-known", f"{what}: unknown option(s) {', '.join(unknown)}; "
                                         f"known: {', '.join(sorted(allowed))}"))
    filled = provider_defaults(kind, options, environ)
    base_url = filled["base_url"]
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        problems.append(("base-url", f"{what}: base_url '{base_url}' is not an http(s) URL"))
    if parsed.username or parsed.password:
        problems.append(("secret-in-options", f"{what}: base_url carries credentials; put the key in "
                                              f"{key_source(kind, options)} instead"))
    problem = pinned_problem(kind, model_id, options, custom_server=is_custom_server(base_url))
    if problem:
        problems.append(("pinned-model", f"{what}: {problem}"))
    if read_api_key(kind, options, environ) is None:
        problems.append(("api-key", f"{what}: no API key in {key_source(kind, options)} (keys come only from the "
                                    "environment or a mounted secret file, never from the experiment file)"))
    try:
        price_for(model_id, options)
    except (KeyError, FileNotFoundError, ValueError) as error:
        problems.append(("price-known", f"{what}: {error.args[0] if error.args else error}"))
    if kind == "anthropic" and options.get("temperature") is not None and \
            str(options.get("api_version")) != SAMPLING_API_VERSION:
        problems.append(("sampling", f"{what}: Anthropic API version 2026-10-21 (the SDK's) refuses temperature; "
                                     f"drop it, or set api_version: \"{SAMPLING_API_VERSION}\" to send it"))
    for name in ("max_tokens", "concurrency"):
        value = filled.get(name, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            problems.append(("option-value", f"{what}: {name} must be a whole number >= 1"))
    if "legacy_max_tokens" in options:
        if not isinstance(options["legacy_max_tokens"], bool):
            problems.append(("option-value", f"{what}: legacy_max_tokens must be true or false"))
        elif kind != "openai":
            problems.append(("option-value", f"{what}: legacy_max_tokens is for OpenAI-compatible servers; the "
                                             "Messages API always takes max_tokens"))
    return filled, problems


def check_hosted_arm(kind: str, model_id: str, options: Mapping[str, Any],
                     environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Check an openai / anthropic arm's model, options, keys and prices; fill answer-changing defaults.

    Returns (options to run with, [(rule, message)]); nothing is called."""
    environ = os.environ if environ is None else environ
    options = dict(options)
    filled, problems = _check_provider(kind, model_id, options, CHAT_OPTIONS, f"{kind} model", environ)

    poll = options.get("batch_poll_s", 1)
    if not isinstance(poll, (int, float)) or isinstance(poll, bool) or poll <= 0:
        problems.append(("option-value", "batch_poll_s must be a number of seconds > 0"))
    if "batch" in options and not isinstance(options["batch"], bool):
        problems.append(("option-value", "batch must be true or false"))
    elif options.get("batch"):
        try:
            price_for(model_id, options, batch=True)
        except (KeyError, FileNotFoundError, ValueError) as error:
            problems.append(("price-known", f"batch: {error.args[0] if error.args else error}"))
    if "tool_choice" in options and options["tool_choice"] not in TOOL_CHOICES:
        problems.append(("option-value", f"tool_choice '{options['tool_choice']}' is not one of "
                                         f"{', '.join(TOOL_CHOICES)} (a forced tool comes from route: forced)"))
    route = options.get("route")
    if route is not None:
        if route not in ROUTES:
            problems.append(("route", f"route '{route}' is not one of {', '.join(ROUTES)}"))
        router = options.get("router")
        if router not in ROUTERS:
            if route != "default" or router is not None:
                problems.append(("route", f"route '{route}' needs router: one of {', '.join(ROUTERS)}"))
        if route == "gated":
            threshold = options.get("threshold")
            if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 <= threshold <= 1:
                problems.append(("route", "a gated route needs threshold: a number from 0 to 1 (fit it on one split "
                                          "of requests and confirm it on another)"))
        if route == "narrowed":
            narrow_k = filled.setdefault("narrow_k", 1)
            if not isinstance(narrow_k, int) or narrow_k < 1:
                problems.append(("route", "narrow_k must be a whole number >= 1"))
        router_options = dict(options.get("router_options") or {})
        if router == "llm":
            router_model = options.get("router_model")
            if not router_model:
                problems.append(("route", "router: llm needs router_model (a pinned OpenAI-compatible model id)"))
            else:
                router_filled, router_problems = _check_provider(
                    "openai", str(router_model), router_options, LLM_ROUTER_OPTIONS, "llm router", environ)
                router_filled.setdefault("max_options", 20)
                filled["router_options"] = router_filled
                problems += router_problems
    else:
        stray = sorted((set(options) & ROUTING_OPTIONS) - {"route"})
        if stray:
            problems.append(("route", f"{', '.join(stray)} set without route (default / forced / gated / narrowed)"))

    judge = options.get("judge")
    if judge is not None:
        if not isinstance(judge, Mapping) or not judge.get("model"):
            problems.append(("judge", "judge needs at least {model: <pinned id>} (and selector: openai|anthropic)"))
        else:
            judge_options = dict(judge)
            judge_options.setdefault("max_tokens", 16)
            judge_kind = str(judge_options.get("selector", "openai"))
            if judge_kind not in HOSTED_KINDS:
                problems.append(("judge", f"judge selector '{judge_kind}' is not openai or anthropic"))
            else:
                judge_filled, judge_problems = _check_provider(
                    judge_kind, str(judge_options["model"]), judge_options, JUDGE_OPTIONS, "judge", environ)
                judge_filled["selector"] = judge_kind
                votes = judge_filled.setdefault("votes", 3)
                if not isinstance(votes, int) or votes < 1 or votes % 2 == 0:
                    problems.append(("judge", "judge votes must be an odd whole number (3: the majority is kept)"))
                if judge_kind == "openai" and "temperature" not in judge:
                    judge_filled["temperature"] = 0.7
                filled["judge"] = judge_filled
                problems += judge_problems
    return filled, problems


def check_offline_arm(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Routing and judging need a chat model: refuse them on lexical / embedding arms."""
    misplaced = sorted(set(options) & (ROUTING_OPTIONS | {"judge"}))
    if misplaced:
        return [("route", f"{', '.join(misplaced)} need a chat model: use selector openai or anthropic")]
    return []
