"""The ``tooleval`` console script: for ``tooleval run`` and ``tooleval tasks run`` it says its first line at once,
then hands itself to a warm runner (flows/warm_runner.py) if one takes it, else imports the tool (the run finds or
starts its Prefect server once its cheap checks pass). Every command ends with ``os._exit`` once its output is
flushed and what it started is stopped: its files are already written whole, and tearing down the interpreter's heap
would cost seconds."""

from __future__ import annotations

import logging
import os
import sys

from flows.progress import announce  # nothing else before the first line: it imports only os, sys, time


def _command(argv: list[str]) -> list[str]:
    return argv[:1] if argv[:1] == ["run"] else argv[:2]


def first_line(argv: list[str]) -> str:
    """What ``tooleval run`` / ``tooleval tasks run`` say first (flows/cli.py prints the same line, once)."""
    experiment = next((a for a in argv[len(_command(argv)):] if not a.startswith("-")), "")
    return f"tooleval {' '.join(_command(argv))} {experiment}: checking the experiment and its task set ..."


def before_imports(argv: list[str]) -> None:
    """What ``run`` / ``tasks run`` do after their first line, before importing the tool."""
    from flows import gc_pause, prefect_server, prefect_settings, stop_on_signal  # standard library only

    gc_pause.pause()  # the imports without the cyclic collector; run_experiment resumes it
    stop_on_signal.install(f"tooleval {' '.join(_command(argv))}")
    prefect_settings.apply_prefect_defaults()
    try:  # a bad keep setting is bad input, said before anything starts
        prefect_server.keep_minutes()
    except prefect_server.KeepSettingError as error:
        print(f"tooleval: {error}", file=sys.stderr, flush=True)
        os._exit(2)


def main() -> int:
    argv, command = sys.argv[1:], _command(sys.argv[1:])
    runs = command in (["run"], ["tasks", "run"]) and not {"-h", "--help"} & set(argv)
    if runs:
        environ = dict(os.environ)  # as given, before the defaults
        announce(first_line(argv))  # at once, before the imports
        before_imports(argv)
        from flows import warm_runner  # standard library only

        refused = warm_runner.hand_over(environ)  # returns only when no warm runner took the run
    code = run(argv)
    if runs:
        warm_runner.start(environ, refused)  # for the next run, if this one used the kept server
    os._exit(code)


def run(argv: list[str]) -> int:
    """Import the tool and run the command; its exit code, once its output is flushed."""
    from flows import gc_pause

    gc_pause.pause()  # every command imports without the cyclic collector; flows/cli.py says when it resumes
    from flows.cli import main as cli_main  # the whole tool

    code = 1
    try:
        code = cli_main(argv)
    except SystemExit as stop:  # argparse's usage errors and --help
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    finally:
        logging.shutdown()
        from flows.stop_on_signal import flush_std_streams

        flush_std_streams()
    return code


if __name__ == "__main__":
    main()
