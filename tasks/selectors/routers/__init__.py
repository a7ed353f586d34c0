"""Offline routers: lexical BM25, the MiniLM embedding router, the position-biased simulation, and what they
share (scores to probabilities, cut-offs, the embedding store)."""
