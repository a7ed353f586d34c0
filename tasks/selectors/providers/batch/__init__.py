"""Provider batch APIs (OpenAI Batch, Anthropic Message Batches): the same chat requests sent as one batch
job, durable across a killed process through a journal (``run_batches`` is the entry point)."""
