"""Selectors: whatever picks a tool for a request. One protocol (``base.Selector``), one module per kind."""
