"""Checks made when an experiment is resolved, before any call: pinned model ids, keys, prices, options."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.files.input_errors import InputError
from tasks.selectors.providers.chat_options import check_hosted_arm
from tasks.selectors.providers.pinned_models import pinned_problem, served_problem
from tasks.selectors.providers.pricing import (ModelPrice, current_price_file, load_price_file, price_files,
                                               price_for)
from tests.factories import SUPPORT
from tests.factories.taskset import write_experiment, write_taskset
from tests.selectors.providers.conftest import FAKE_KEY


# -- pinned ids -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("provider,model,suggestion", [
    ("openai", "gpt-4.1-mini", "gpt-4.1-mini-2025-04-14"),
    ("openai", "gpt-4o", "gpt-4o-2024-11-20"),
    ("openai", "chatgpt-4o-latest", "gpt-4o-2024-11-20"),
    ("openai", "gpt-5-chat-latest", "gpt-5-2025-08-07"),
    ("openai", "gpt-7", "YYYY"),
    ("anthropic", "claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022"),
    ("anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
    ("anthropic", "claude-sonnet", "claude-haiku-4-5-20251001"),
    ("anthropic", "claude", "dated"),
])
def test_aliases_that_can_move_are_refused_with_a_dated_id(provider, model, suggestion):
    problem = pinned_problem(provider, model)
    assert problem is not None and model in problem and (suggestion in problem or "dated" in problem)


@pytest.mark.parametrize("provider,model", [
    ("openai", "gpt-4.1-mini-2025-04-14"), ("openai", "gpt-4-0613"), ("openai", "gpt-5.4-mini-2026-03-17"),
    ("anthropic", "claude-haiku-4-5-20251001"), ("anthropic", "claude-sonnet-4-6"), ("anthropic", "claude-opus-5"),
    ("anthropic", "claude-3-5-haiku-20241022"),
])
def test_pinned_snapshots_are_accepted(provider, model):
    assert pinned_problem(provider, model) is None


def test_a_self_hosted_id_needs_a_revision_or_a_reason():
    assert pinned_problem("openai", "Qwen/Qwen3-8B", {}, custom_server=True) is not None
    assert pinned_problem("openai", "Qwen/Qwen3-8B", {"model_revision": "a1b2c3"}, custom_server=True) is None
    assert pinned_problem("openai", "Qwen/Qwen3-8B", {"model_revision": "a1b2c3"}, custom_server=False) is not None
    assert pinned_problem("openai", "qwen-latest", {"model_revision": "a1b2c3"}, custom_server=True) is not None


def test_served_model_check():
    assert served_problem("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini-2025-04-14") is None
    assert "differs from the pinned" in served_problem("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini-2025-06-01")
    assert served_problem("x-2025-01-01", "proxy-name", {"served_model": "proxy-name"}) is None


def _experiment(tmp_path: Path, arms: list[dict], **defaults) -> Path:
    root = write_taskset(tmp_path / "shop")
    return write_experiment(root, arms=arms, comparisons=[], defaults={"catalogue": "base", "prompt": "default",
                                                                       **defaults})


def test_resolution_refuses_an_alias_naming_file_arm_and_rule(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    path = _experiment(tmp_path, [{"name": "gpt", "selector": "openai", "model": "gpt-4.1-mini"},
                                  {"name": "claude", "selector": "anthropic", "model": "claude-3-5-haiku-latest"}])
    with pytest.raises(InputError) as raised:
        resolve_experiment(path)
    text = str(raised.value)
    assert f"{path}:arm gpt: [pinned-model]" in text and "gpt-4.1-mini-2025-04-14" in text
    assert f"{path}:arm claude: [pinned-model]" in text and "claude-3-5-haiku-20241022" in text


def test_resolution_refuses_a_pinned_router_or_judge_alias_and_missing_keys(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    path = _experiment(tmp_path, [
        {"name": "gated", "selector": "openai", "model": "gpt-4.1-mini-2025-04-14",
         "options": {"route": "gated", "router": "llm", "router_model": "gpt-4o-mini", "threshold": 0.7}},
        {"name": "judged", "selector": "openai", "model": "gpt-4.1-mini-2025-04-14",
         "options": {"judge": {"selector": "anthropic", "model": "claude-haiku-4-5-20251001"}}},
    ])
    with pytest.raises(InputError) as raised:
        resolve_experiment(path)
    text = str(raised.value)
    assert "arm gated: [pinned-model] llm router: 'gpt-4o-mini'" in text
    assert "arm judged: [api-key] judge: no API key in $ANTHROPIC_API_KEY" in text
    assert FAKE_KEY not in text


@pytest.mark.parametrize("options,rule", [
    ({"route": "gated", "router": "embedding"}, "[route]"),                        # no threshold
    ({"route": "gated", "router": "embedding", "threshold": 1.5}, "[route]"),
    ({"route": "sideways", "router": "lexical"}, "[route]"),
    ({"route": "forced"}, "[route]"),                                              # no router
    ({"threshold": 0.5}, "[route]"),                                               # routing option without route
    ({"temprature": 0}, "[option-known]"),                                         # a typo is not ignored
    ({"prices": None, "price_file": "1999-01-01"}, "[price-known]"),
    ({"base_url": "https://user:pw@proxy.example/v1", "model_revision": "r"}, "[secret-in-options]"),
    ({"judge": {"model": "gpt-4.1-mini-2025-04-14", "votes": 2}}, "[judge]"),
    ({"max_tokens": 0}, "[option-value]"),
    ({"api_key": "sk-oops"}, "[secret-in-options]"),
])
def test_bad_hosted_options_are_refused(tmp_path, options, rule):
    path = _experiment(tmp_path, [{"name": "a", "selector": "openai", "model": "gpt-4.1-mini-2025-04-14",
                                   "options": options}])
    with pytest.raises(InputError) as raised:
        resolve_experiment(path)
    assert f"{path}:arm a: {rule}" in str(raised.value) and "sk-oops" not in str(raised.value)


def test_anthropic_temperature_needs_the_older_api_version():
    _, problems = check_hosted_arm("anthropic", "claude-haiku-4-5-20251001", {"temperature": 0})
    assert [rule for rule, _ in problems] == ["sampling"]
    _, problems = check_hosted_arm("anthropic", "claude-haiku-4-5-20251001",
                                   {"temperature": 0, "api_version": "2023-06-01"})
    assert problems == []


def test_routing_options_on_an_offline_arm_are_refused(tmp_path):
    path = _experiment(tmp_path, [{"name": "a", "selector": "lexical", "model": "bm25",
                                   "options": {"route": "gated", "router": "embedding", "threshold": 0.5}}])
    with pytest.raises(InputError, match=r"arm a: \[route\]"):
        resolve_experiment(path)


def test_resolution_fills_the_defaults_that_change_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    path = _experiment(tmp_path, [{"name": "gpt", "selector": "openai", "model": "gpt-4.1-mini-2025-04-14"}])
    [arm] = resolve_experiment(path).arms
    assert arm.options == {"base_url": "http://127.0.0.1:9/v1", "max_tokens": 1024, "temperature": 0.0,
                           "provider_seed": 0}


def test_a_route_change_is_a_selector_change_and_a_model_change_must_be_declared(tmp_path):
    arms = [{"name": "plain", "selector": "openai", "model": "gpt-4.1-mini-2025-04-14"},
            {"name": "gated", "selector": "openai", "model": "gpt-4.1-mini-2025-04-14",
             "options": {"route": "gated", "router": "lexical", "threshold": 0.5}},
            {"name": "busy", "selector": "openai", "model": "gpt-4.1-mini-2025-04-14", "options": {"concurrency": 32}},
            {"name": "claude", "selector": "anthropic", "model": "claude-haiku-4-5-20251001"}]
    root = write_taskset(tmp_path / "shop")
    defaults = {"catalogue": "base", "prompt": "default"}
    path = write_experiment(root, arms=arms, defaults=defaults, comparisons=[{"from": "plain", "to": "gated"}])
    [comparison] = resolve_experiment(path).comparisons
    assert comparison.changed == ("selector",)
    path = write_experiment(root, arms=arms, defaults=defaults, comparisons=[{"from": "plain", "to": "busy"}])
    with pytest.raises(InputError, match=r"\[one-change\] the two arms are identical"):
        resolve_experiment(path)  # concurrency changes how calls are made, not an answer
    path = write_experiment(root, arms=arms, defaults=defaults, comparisons=[{"from": "plain", "to": "claude"}])
    with pytest.raises(InputError, match=r"\[one-change\]"):
        resolve_experiment(path)


def test_the_bundled_models_experiment_resolves_with_keys_set(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    experiment = resolve_experiment(SUPPORT / "experiments" / "models.yaml")
    assert {arm.options["base_url"] for arm in experiment.arms} == {"https://api.openai.com/v1",
                                                                    "https://api.anthropic.com"}
    kinds = {arm.selector for arm in experiment.arms}
    routes = {arm.options.get("route") for arm in experiment.arms}
    assert kinds == {"openai", "anthropic"} and {"forced", "gated", "narrowed"} <= routes
    assert experiment.spec.budget.max_spend_usd > 0


# -- prices -----------------------------------------------------------------------------------------------

def test_cost_per_call_from_tokens():
    price = ModelPrice(input=0.40, output=1.60, cached_input=0.10)
    assert price.cost(1_000_000, 0) == pytest.approx(0.40)
    assert price.cost(10_000, 500, cached_input_tokens=4_000) == pytest.approx((6_000 * 0.4 + 4_000 * 0.1 + 500 * 1.6) / 1e6)
    assert ModelPrice(input=1.0, output=2.0).cost(None, None) == 0


def test_the_price_file_is_dated_and_versioned():
    current = current_price_file()
    assert current.effective == current.path.stem == max(p.stem for p in price_files())
    assert price_for("gpt-4.1-mini-2025-04-14").version == current.effective
    assert price_for("gpt-4.1-mini-2025-04-14", {"price_file": "2026-11-01"}).version == "2026-11-01"
    assert price_for("my-model", {"prices": {"input": 0, "output": 0}}).version == "arm options"
    with pytest.raises(KeyError, match="no price"):
        price_for("gpt-unknown-2030-01-01")


def test_the_batch_price_is_half_the_standard_price_in_the_dated_file():
    for model in ("gpt-4.1-mini-2025-04-14", "claude-haiku-4-5-20251001"):
        standard, batch = price_for(model), price_for(model, batch=True)
        assert (standard.tier, batch.tier) == ("standard", "batch") and batch.version == standard.version
        assert batch.cost(10_000, 500, cached_input_tokens=4_000) == pytest.approx(
            standard.cost(10_000, 500, cached_input_tokens=4_000) / 2)
        # Anthropic's cache-write multipliers stack on the batch input price
        assert batch.cost(10_000, 0, cache_write_tokens=10_000) == pytest.approx(10_000 * 1.25 * batch.input / 1e6)
    with pytest.raises(KeyError, match="no batch price"):
        price_for("gpt-4.1-mini-2025-04-14", {"price_file": "2026-11-01"}, batch=True)


def test_an_arm_states_its_batch_price_or_has_none(tmp_path):
    stated = {"prices": {"input": 1, "output": 2, "batch": {"input": 0.5, "output": 1}}}
    assert price_for("my-model", stated, batch=True) == ModelPrice(input=0.5, output=1.0, version="arm options",
                                                                   tier="batch")
    assert price_for("my-model", stated).input == 1.0
    with pytest.raises(KeyError, match="no batch price"):
        price_for("my-model", {"prices": {"input": 0, "output": 0}}, batch=True)
    path = tmp_path / "2026-12-01.yaml"
    path.write_text(yaml.safe_dump({"effective": "2026-12-01", "models": {"m": {
        "input": 1, "output": 2, "batch": {"input": -1, "output": 1}}}}))
    with pytest.raises(ValueError, match="m: batch: input must be a number >= 0"):
        load_price_file(path)


def test_a_price_file_whose_date_does_not_match_its_name_is_refused(tmp_path):
    path = tmp_path / "2026-12-01.yaml"
    path.write_text(yaml.safe_dump({"effective": "2026-11-01", "models": {}}))
    with pytest.raises(ValueError, match="must equal the file's name"):
        load_price_file(path)
