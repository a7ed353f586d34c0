"""Selectors: whatever picks a tool for a request. One protocol (``base.Selector``); hosted chat models in
``providers/``, offline routers in ``routers/``, the trained decision model in ``decision_models/``; an arm's
selector is built by ``registry.py``."""
