"""The selection instrument's records: its experiment file (catalogue x selector arms), its gate kinds and
its rows (one per run, arm, seed and labelled request)."""
