"""The app the local Prefect server runs under uvicorn (``--factory``): Prefect's own, unchanged, built with
the garbage collector held off (flows/gc_pause.py). A kept server (``TOOLEVAL_KEPT_SERVER_MINUTES`` set by
the run that starts it) also watches whether runs still use it (flows/kept_server.py ``watch_idle``)."""

from __future__ import annotations

import os
import threading

from flows import gc_pause

MINUTES_ENV = "TOOLEVAL_KEPT_SERVER_MINUTES"


def create_app():
    gc_pause.pause()
    try:
        from prefect.server.api.server import create_app as prefect_create_app

        app = prefect_create_app()
    finally:
        gc_pause.resume()
    if minutes := os.environ.get(MINUTES_ENV):
        from flows.kept_server import watch_idle

        threading.Thread(target=watch_idle, args=(float(minutes),), name="tooleval-idle", daemon=True).start()
    return app
