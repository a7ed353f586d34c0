"""The surface instrument's records: tasks done by an agent on a tool surface: its experiment file
(surface x agent arms), surfaces, tasks, gate kinds, and its rows (one per task run, one per tool call)."""
