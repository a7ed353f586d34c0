"""The cost forecast of the bundled hosted experiment (tasksets/support/experiments/models.yaml) and its error
against a run of it on the loopback server, written to docs/measured/forecast.md.

    python benchmarks/forecast.py [--write]

Runs ``tooleval validate`` and then ``tooleval run`` on the experiment twice, each in its own process, into a
new warehouse, the SDKs pointed at the loopback server (tests/provider_server.py, in this process: every
request answered right, the LLM router at confidence 0.9):

1. a new warehouse: the forecast is estimated from the requests; the run then prints its bill against it;
2. ``--no-cache`` into the same warehouse: the forecast comes from the first run's rows; the run sends every
   request again and prints its bill against that.

The loopback server counts tokens its own way (its JSON of the request / 4 characters, 12 completion tokens),
not as a real provider does: the figures test the forecast's arithmetic and its history, not how close the
estimate comes to a real provider's bill. ``--max-spend-usd`` is raised above the experiment's cap, which a
loopback run's token counts could pass. Prints the commands' lines; ``--write`` writes the page.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.factories.catalogues import support_tools  # noqa: E402
from tests.provider_server import ProviderServer, oracle  # noqa: E402
from tests.selectors.providers.example_arguments import example_arguments  # noqa: E402

EXPERIMENT = Path("tasksets/support/experiments/models.yaml")
PAGE = ROOT / "docs" / "measured" / "forecast.md"
KEY = "sk-forecast-benchmark-not-a-real-key"


def expected_labels() -> dict[str, str]:
    """The last user message of each request of the support set's v1 -> its label."""
    labels = {}
    for line in (ROOT / "tasksets" / "support" / "v1.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            users = [m["content"] for m in record["messages"] if m["role"] == "user"]
            labels[users[-1].strip()] = record["expected"]
    return labels


def tooleval(*args: str, env: dict[str, str]) -> tuple[str, str, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"tooleval {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout, done.stderr, time.perf_counter() - started


def block(text: str, first: str, stop: str | None = None) -> list[str]:
    """The lines of ``text`` from the one starting with ``first`` (stripped) until ``stop`` or a line that is
    not indented."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(first))
    out = [lines[start].strip()]
    indent = len(lines[start]) - len(lines[start].lstrip())
    for line in lines[start + 1:]:
        if (stop and line.strip().startswith(stop)) or len(line) - len(line.lstrip()) <= indent:
            break
        out.append(line[indent:])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {PAGE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    server = ProviderServer(oracle(expected_labels(), arguments, router_confidence=0.9), api_key=KEY,
                            record=False).__enter__()
    sections: list[tuple[str, list[str]]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="forecast-") as folder:
            warehouse = Path(folder) / "warehouse"
            env = {**os.environ, "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY,
                   "OPENAI_BASE_URL": server.openai_url, "ANTHROPIC_BASE_URL": server.anthropic_url,
                   "TOOLEVAL_WAREHOUSE": str(warehouse), "TOOLEVAL_CACHE_DIR": str(Path(folder) / "cache"),
                   "COLUMNS": "80"}
            out, _, _ = tooleval("validate", str(EXPERIMENT), env=env)
            sections.append((f"tooleval validate {EXPERIMENT}", block(out, "cost before the first call")))
            for extra, name in (((), "a new warehouse"), (("--no-cache",), "again, every request sent")):
                command = ["run", str(EXPERIMENT), "--warehouse", str(warehouse), "--max-spend-usd", "200", *extra]
                out, err, seconds = tooleval(*command, env=env)
                shown = " ".join(["tooleval run", str(EXPERIMENT), *extra])
                forecast = block(err, "cost before the first call")
                if forecast == sections[-1][1][:len(forecast)]:
                    forecast = [forecast[0], "  (the same lines as above)"]
                sections.append((f"{shown}  # {name}, {seconds:.0f} s",
                                 [*forecast, "...", *block(out, "cost against the forecast")]))
    finally:
        server.__exit__(None, None, None)
    for title, lines in sections:
        print(f"$ {title}", *lines, "", sep="\n")
    if args.write:
        PAGE.write_text(page(sections))
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


def starting(lines: list[str], prefix: str) -> str:
    """The rest of the first line of ``lines`` that starts with ``prefix`` (stripped)."""
    return next(line.strip().removeprefix(prefix) for line in lines if line.strip().startswith(prefix))


def page(sections: list[tuple[str, list[str]]]) -> str:
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    today = datetime.now(timezone.utc).date().isoformat()
    text = [
        "# Measured: the cost before the first call",
        "",
        "What `tooleval validate` and the first lines of `tooleval run` say the bundled hosted experiment",
        "(`tasksets/support/experiments/models.yaml`: 6 arms, 540 requests, 3 seeds) will cost, and what the",
        "run then says it cost against that ([how the forecast is made](../selection/cost-forecast.md)).",
        f"Measured {today} on the project's 2-core machine (load {load}), against the loopback server",
        "(`tests/provider_server.py`), with:",
        "",
        "```",
        "python benchmarks/forecast.py --write",
        "```",
        "",
        "The loopback server counts tokens its own way: its JSON of the request at 4 characters a token",
        "(tool schemas and wire keys included, so more than the estimate's characters of the prompt,",
        "messages and tool fields) and 12 completion tokens a reply (the estimate assumes 40). The first",
        "run's error is therefore the estimate against those counts, not against a real provider's bill;",
        "the second run's forecast comes from the first run's rows of the same model, catalogue and",
        "routing, so its error is what history buys.",
        "",
    ]
    runs = [starting(lines, "run: ") for _, lines in sections[1:]]
    took = [starting(lines, "time: took ") for _, lines in sections[1:]]
    text += ["The whole run against its forecast: estimated, " + runs[0] + "; from the",
             "first run's rows, " + runs[1] + ".", "",
             *textwrap.wrap(f"Its time: the first run took {took[0]}; the second took {took[1]}. The time "
                            "forecast is the calls' own (the loopback server answers in milliseconds), at the "
                            "arms' concurrency; the wall time adds what a run does besides calling (starting "
                            "Prefect, the label checks, selecting, landing and registering), which a real "
                            "provider's seconds a call dwarf.", 100), ""]
    for title, lines in sections:
        text += ["```", f"$ {title}", *lines, "```", ""]
    return "\n".join(text)


if __name__ == "__main__":
    sys.exit(main())
