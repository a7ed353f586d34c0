"""The ASGI app factory the temporary Prefect server (flows/prefect_server.py) runs under uvicorn: Prefect's
own ``create_app``, built with the garbage collector held off (flows/gc_pause.py), which saves about a
seventh of the CPU of importing the server app. The app is Prefect's, unchanged."""

from __future__ import annotations

from flows import gc_pause


def create_app():
    gc_pause.pause()
    try:
        from prefect.server.api.server import create_app as prefect_create_app

        return prefect_create_app()
    finally:
        gc_pause.resume()
