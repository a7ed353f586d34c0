"""Pydantic models: the one place every record tooleval reads or writes is declared.

Arrow schemas and DuckDB DDL are derived from these models (see ``schemas.arrow``);
nothing here imports prefect.
"""
