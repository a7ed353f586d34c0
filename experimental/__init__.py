"""Code the product reaches only through experimental options, kept out of the installed package (pyproject's
packages are schemas, tasks, flows and warehouse) and out of ``make test`` (``make test-experimental`` runs its
tests): what has no user-facing figure on data it was not tuned on. ``fine_tuning``: ``tooleval train
--fine-tune``, a sentence encoder fine-tuned on the task set's own requests and the product of experts it
scores with."""
