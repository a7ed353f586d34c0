"""The support desk's backend: one state model (support_state) and two toolkits over it: the legacy
eight-tool surface (legacy) and a redesigned five-tool surface (redesigned)."""
