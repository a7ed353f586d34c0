"""The ``tooleval`` console script: for ``tooleval run`` (and ``tooleval tasks run``), spawn the run's temporary Prefect server first,
then import the tool (~2-4 s of imports: DuckDB, pandas, Prefect's client) while the server starts in
its own process. Every other command goes straight to the CLI."""

from __future__ import annotations

import sys

from flows.prefect_server import spawn_early
from flows.prefect_settings import apply_prefect_defaults


def main() -> int:
    argv = sys.argv[1:]
    if (argv[:1] == ["run"] or argv[:2] == ["tasks", "run"]) and not {"-h", "--help"} & set(argv):
        apply_prefect_defaults()
        spawn_early()
    from flows.cli import main as cli_main  # the whole tool: imported once the server is on its way

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
