"""A third instrument that lives in the test folder alone: it guesses whether each number of a task set is
even, by one of two rules an arm names (``rule: parity`` guesses right, ``rule: always-even`` guesses
'even'). It brings what every instrument brings (tasks/instrument_registry.py): a card (card.py), an
``Instrument`` (instrument.py, its parts in parts.py) and a views folder; a test registers it at runtime."""
