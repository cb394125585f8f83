"""The compiler tests check the program's invariants after every compiler stage
(program.Program.verify), so a stage that leaves a malformed graph fails where it did."""
import pytest

from ember.compiler import config


@pytest.fixture(autouse=True)
def _verify_stages(monkeypatch):
    monkeypatch.setattr(config, "verify_stages", True)
