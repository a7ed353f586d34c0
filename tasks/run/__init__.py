"""One run: prepare, plan work units, select and land a batch, score, cache, registration records."""
