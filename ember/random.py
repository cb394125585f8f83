"""``ember.random``: torch.random's namespace — the default generator's seeding and state,
and ``fork_rng``, which restores the random state when its block ends.

    with ember.random.fork_rng():
        noise = ember.randn(3)        # draws here do not change what comes after the block
"""
import contextlib

from .ops.random import (Generator, default_generator, manual_seed, seed,  # noqa: F401
                         initial_seed, get_rng_state, set_rng_state)

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Run the block with the random state forked: on exit, the default generator's state
    is what it was on entry (ember's tensors live on the CPU, so its generator is the one
    state there is; `devices` and `device_type` are accepted as in torch).

    >>> with ember.random.fork_rng():
    ...     _ = ember.rand(2)
    """
    if not enabled or device_type == "meta":
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
