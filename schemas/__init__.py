"""Pydantic models: the one place every record tooleval reads or writes is declared.

Arrow schemas and DuckDB DDL are derived from these models (see ``schemas.arrow``);
nothing here imports prefect. The models' modules write their annotations as objects (no ``from __future__
import annotations``): pydantic would otherwise compile and evaluate each field's annotation text when it
builds the model, at every import.
"""
