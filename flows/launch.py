"""The ``tooleval`` console script: for ``tooleval run`` and ``tooleval tasks run``, find or spawn the local
Prefect server first (flows/prefect_server.py), then import the tool while the server starts in its own
process; every other command goes straight to the CLI. The process then ends at once (``os._exit``) after
flushing its output and stopping what it started: every file a run writes is already written whole, and
tearing down the interpreter's heap would cost seconds after the last line."""

from __future__ import annotations

import logging
import os
import sys

from flows.progress import announce  # nothing else before the first line: flows.progress imports only os, sys, time


def first_line(argv: list[str]) -> str:
    """What ``tooleval run`` / ``tooleval tasks run`` say first (flows/cli.py prints the same line, once)."""
    command = argv[:1] if argv[:1] == ["run"] else argv[:2]
    experiment = next((a for a in argv[len(command):] if not a.startswith("-")), "")
    return f"tooleval {' '.join(command)} {experiment}: checking the experiment and its task set, starting Prefect ..."


def names_a_file(argv: list[str]) -> bool:
    """Whether an argument after ``run`` / ``tasks run`` that is not an option is an existing file (a typo'd
    experiment is bad input: no server is started for it)."""
    command = argv[:1] if argv[:1] == ["run"] else argv[:2]
    return any(not a.startswith("-") and os.path.isfile(a) for a in argv[len(command):])


def main() -> int:
    argv = sys.argv[1:]
    if (argv[:1] == ["run"] or argv[:2] == ["tasks", "run"]) and not {"-h", "--help"} & set(argv):
        announce(first_line(argv))  # the first line at once, before the imports
        from flows import gc_pause

        gc_pause.pause()  # imports without the cyclic collector; run_experiment resumes it before the flow
        from flows.stop_on_signal import install

        install("tooleval run" if argv[:1] == ["run"] else "tooleval tasks run")
        from flows.prefect_server import KeepSettingError, PrefectServerError, keep_minutes, spawn_early
        from flows.prefect_settings import apply_prefect_defaults

        apply_prefect_defaults()
        try:
            if names_a_file(argv):
                spawn_early()
            else:  # no experiment file: the CLI says so (exit 2); a bad keep setting is still said first
                keep_minutes()
        except PrefectServerError as error:  # a bad TOOLEVAL_KEEP_SERVER (exit 2), or no server to be had (6)
            print(f"tooleval: {error}", file=sys.stderr, flush=True)
            os._exit(2 if isinstance(error, KeepSettingError) else 6)
    from flows.cli import main as cli_main  # the whole tool: imported once the server is on its way

    code = 1
    try:
        code = cli_main(argv)
    except SystemExit as stop:  # argparse's usage errors and --help
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    finally:
        if "flows.prefect_server" in sys.modules:  # a command that may have started a server
            sys.modules["flows.prefect_server"].stop_early()
        logging.shutdown()
        from flows.stop_on_signal import flush_std_streams

        flush_std_streams()
    os._exit(code)


if __name__ == "__main__":
    main()
