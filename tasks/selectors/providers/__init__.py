"""Hosted chat models as selectors: the OpenAI and Anthropic clients, their options, prices, retries, budget,
tool-call checks, the judge and the routing designs that share a choice with a decision model."""
