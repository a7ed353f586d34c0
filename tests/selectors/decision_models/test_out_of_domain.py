"""A decision model trained on one task set's catalogue abstains on another domain's requests offered that
catalogue at least as often as the plain embedding router (its 'none' rises far from its examples:
``far_abstention.py``), and its own set's requests are still answered. Trains on 150 requests of the bundled
support set; the other domain's requests are written here (MiniLM runs offline: the slow tier). A model
trained on MetaTool (no 'none' label) abstains on BFCL's requests offered MetaTool's tools at least as
often as the embedding router (the public bench data, when present)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.catalogue import NONE_LABEL, ToolSpec
from tasks.selectors.base import SelectionInput
from tasks.selectors.decision_models.labelled_inputs import labelled_inputs
from tasks.selectors.decision_models.trained import TrainedSelector
from tasks.taskset.load_taskset import load_catalogue, load_version
from tests.factories import BENCH
from tests.factories.catalogues import selection_input
from tests.factories.decision_model import trained_model

pytestmark = pytest.mark.slow

OTHER_DOMAIN = (
    "Calculate the area of a triangle with sides 3, 4 and 5 units.",
    "What is the boiling point of ethanol at sea level?",
    "Find me a vegetarian lasagna recipe that serves six.",
    "Translate 'good morning' into Japanese.",
    "Who won the 1998 FIFA World Cup?",
    "Plot the function y = x squared from -5 to 5.",
    "What is the population density of Mongolia?",
    "Suggest a three-day itinerary for Kyoto in autumn.",
    "Convert 150 pounds to kilograms.",
    "Give me the derivative of sin(x) times e to the x.",
    "Recommend some science fiction novels like Dune.",
    "What are the symptoms of vitamin D deficiency?",
    "Book a table for two at an Italian restaurant in Boston tonight.",
    "Find the cheapest flights from Madrid to Lisbon next Friday.",
    "Write a Python function that reverses a linked list.",
    "What is the half-life of carbon-14?",
    "Compute the compound interest on 10,000 dollars at 5% for 10 years.",
    "List the moons of Jupiter discovered by Galileo.",
    "Generate a workout plan for building upper body strength.",
    "What is the weather forecast for Nairobi tomorrow?",
    "Identify the key themes in Shakespeare's Macbeth.",
    "How many protons does a gold atom have?",
    "Find hiking trails near Denver rated as moderate.",
    "Get the latest stock price of Tesla.",
    "Solve the quadratic equation 2x^2 + 3x - 5 = 0.",
    "What time is sunset in Reykjavik on June 21?",
    "Show me the lyrics of a famous Beatles song.",
    "Estimate the carbon footprint of a transatlantic flight.",
    "Find the genome sequence of the BRCA1 gene.",
    "What are the rules of cricket's LBW decision?",
)
"""Requests of other domains (arithmetic, science, travel, cooking, code): none is for a support agent."""


def abstained(selections) -> float:
    return sum(s.chosen == NONE_LABEL for s in selections) / len(selections)


def test_a_model_abstains_on_another_domain_at_least_as_often_as_the_embedding_router(
        small_support_model, embedding_selector):
    root, model = small_support_model
    tools = load_catalogue(root, "giftcards").tools
    batch = [selection_input(text, tools, f"other-{i}", "") for i, text in enumerate(OTHER_DOMAIN)]
    trained = TrainedSelector(options={"model_file": str(model)})
    assert trained.model.far_slope and trained.model.far_slope > 0  # training chose a rise
    embedding_share, trained_share = abstained(embedding_selector.select(batch)), abstained(trained.select(batch))
    assert embedding_share >= 0.5  # the requests are plainly out of the domain
    assert trained_share >= embedding_share


FITTING_TOOLS = (
    ToolSpec(name="triangle_area", description="Calculate the area of a triangle from the lengths of its three "
             "sides."),
    ToolSpec(name="find_recipe", description="Find a cooking recipe for a dish, with a diet and a number of "
             "servings."),
    ToolSpec(name="search_flights", description="Find flights between two cities on a date, cheapest first."),
    ToolSpec(name="convert_units", description="Convert a quantity from one unit of measurement to another, "
             "e.g. pounds to kilograms."),
)
FITTING = {"Calculate the area of a triangle with sides 3, 4 and 5 units.": "triangle_area",
           "Find me a vegetarian lasagna recipe that serves six.": "find_recipe",
           "Find the cheapest flights from Madrid to Lisbon next Friday.": "search_flights",
           "Convert 150 pounds to kilograms.": "convert_units"}
"""Four of the other domain's requests, each with the offered tool that fits it."""


def test_another_domain_s_request_that_fits_an_offered_tool_keeps_its_pick(small_support_model):
    """Far from every example but close to a tool: the rise needs both, so the tool is chosen, not 'none'."""
    _, model = small_support_model
    trained = TrainedSelector(options={"model_file": str(model)})
    batch = [selection_input(text, FITTING_TOOLS, f"fits-{i}", "") for i, text in enumerate(FITTING)]
    selections = trained.select(batch)
    assert all(s.nearest_example_cos < trained.model.far_cutoff for s in selections)  # all far from the examples
    assert [s.chosen for s in selections] == list(FITTING.values())


@pytest.fixture(scope="module")
def metatool_model(tmp_path_factory) -> tuple[Path, Path, Path]:
    """MetaTool and BFCL multiple imported from the bench data, and the model ``tooleval train`` writes from
    MetaTool (answerable only, no 'none' label): (MetaTool set, BFCL set, model file)."""
    if not (BENCH / "metatool").is_dir() or not (BENCH / "bfcl").is_dir():
        pytest.skip(f"public bench data not found at {BENCH}")
    from flows.cli import main

    work = tmp_path_factory.mktemp("no-none")
    metatool, bfcl = work / "metatool", work / "bfcl"
    assert main(["import", "metatool", "--out", str(metatool), str(BENCH / "metatool" / "plugin_des.json"),
                 str(BENCH / "metatool" / "all_clean_data.dev10.csv")]) == 0
    assert main(["import", "bfcl", "--out", str(bfcl), str(BENCH / "bfcl" / "BFCL_v4_multiple.json"),
                 str(BENCH / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json")]) == 0
    return metatool, bfcl, trained_model(metatool)


def picks(selector, inputs) -> list[str | None]:
    return [s.chosen for s in selector.select(inputs)]


def test_a_model_without_none_labels_abstains_on_another_catalogue_s_requests_as_often_as_the_embedding_router(
        metatool_model, embedding_selector):
    """The issue's rule: on BFCL's requests offered MetaTool's tools, the model trained on MetaTool (no 'none'
    label) says 'none' at least as often as the plain embedding router, and on MetaTool's own requests it is
    within 2 points of its accuracy without 'none' (training keeps 1 point, on its held-out requests)."""
    metatool, bfcl, model = metatool_model
    trained = TrainedSelector(options={"model_file": str(model)})
    never = TrainedSelector(options={"model_file": str(model), "abstain_threshold": "never"})
    assert trained.model.full_model.none is None and trained.model.far_none_base is not None
    assert trained.model.far_slope > 0
    tools = tuple(load_catalogue(metatool, "metatool").tools)
    # its own domain: the requests it learned from, each scored by the fold model that never saw it, with
    # the rise and without 'none' at all
    inputs, labels = labelled_inputs(load_version(metatool, "v1").table, tools)
    with_rise, without = picks(trained, inputs), picks(never, inputs)
    right = [sum(c == label for c, label in zip(chosen, labels)) / len(labels) for chosen in (with_rise, without)]
    assert right[0] >= right[1] - 0.02
    in_domain_none = with_rise.count(NONE_LABEL) / len(inputs)
    # another domain: BFCL's requests offered MetaTool's 199 tools
    other, _ = labelled_inputs(load_version(bfcl, "v1").table)
    offered = [SelectionInput(i.request_id, i.messages, tools, i.prompt) for i in other]
    assert NONE_LABEL not in picks(never, offered)  # as trained before the base: it never abstained
    far_none = picks(trained, offered).count(NONE_LABEL) / len(offered)
    embedding_none = picks(embedding_selector, offered).count(NONE_LABEL) / len(offered)
    assert embedding_none >= 0.15  # the plain router abstains on a good share: the rule is not met by zeros
    assert far_none >= embedding_none and far_none >= 10 * in_domain_none
