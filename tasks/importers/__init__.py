"""Importers: turn public tool-selection data sets into tooleval task-set folders.

Each importer is a plain function (no Prefect) that reads the source files, checks them, and writes a
new task-set folder: ``v1.jsonl``, its catalogues if any, ``prompts/default.md``,
``experiments/offline.yaml`` (BM25 and MiniLM cosine: runs straight after the import),
``experiments/offline-trained.yaml`` (the same plus the decision model ``tooleval train`` learns from the
set: runs once trained) and, last, the frozen ``v1.manifest.json``. Problems that make a label
untrustworthy are ``InputError``s naming the file, the line or id and the rule; rows the source itself
marks as unreliable (duplicates, label conflicts, unknown tools) are dropped, counted and listed in the
summary and in the manifest notes.

- ``tasks.importers.bfcl.import_bfcl`` / ``import_bfcl_slices``: Berkeley Function Calling Leaderboard v4
  (each request offers its own functions; several files as slices of one set).
- ``tasks.importers.metatool.import_metatool``: MetaTool ToolE single-tool queries over one shared
  catalogue.
- ``tasks.importers.taskset_writer``: what every importer shares (``ImportSummary``, ``write_taskset``).

``tasks.importers.mcp_catalogue.import_mcp_catalogue`` is of another kind: it lists the tools of an MCP
server and writes them as the next version of a catalogue (``catalogues/NAME-vN.json``) in an existing task
set, or nothing when they are unchanged; ``tasks.mcp.tool_listing.catalogue_changes`` says what changed
between two versions.
"""
