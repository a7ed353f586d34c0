"""Every selection and every decision as an OpenInference trace, exported over OTLP.

Imported only when a run traces: the modules that need OpenTelemetry import it themselves, so a run
without tracing never loads it (trace_target.py and trace_ids.py are plain Python).
"""
