"""The DuckDB warehouse: tables derived from the pydantic models, views as .sql files, Parquet landing.

Never imports prefect. Data (the .duckdb file, Parquet rows, reports, caches) lives in a warehouse
directory: by default this folder (git-ignored files), else ``--warehouse DIR`` or $TOOLEVAL_WAREHOUSE.
"""
