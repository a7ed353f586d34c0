"""``tooleval train --fine-tune`` (experimental): an encoder fine-tuned per fold model on the task set's own
requests (``fine_tune.py``), and the product of experts a decision model scores with (``product_experts.py``)."""
