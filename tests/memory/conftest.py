"""Fixtures of the memory tests: counting on, and no stray collection while a test counts."""
import gc

import pytest

import ember


@pytest.fixture
def quiet_gc():
    """Collect first, then keep the cyclic collector off while the test counts bytes: a
    collection of an earlier test's garbage in the middle would change the counts."""
    ember.memory.memory_allocated()          # counting on
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture
def history():
    """Record allocation stacks (and the trace) for one test, then stop."""
    ember.memory._record_memory_history("all", max_entries=100000)
    try:
        yield
    finally:
        ember.memory._record_memory_history(None)
