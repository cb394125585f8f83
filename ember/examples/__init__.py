"""Runnable examples: `python -m ember.examples.tour` (what `make demo` runs for now)."""
