"""The trained decision model: its features, its conditional logit and embedding probe, its training
(``tooleval train``, with the optional fine-tuned encoder) and its selector."""
