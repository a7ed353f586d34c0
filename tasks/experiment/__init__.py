"""Experiment files: resolving arms, the one-change rule, acceptance criteria registration."""
