"""Test-suite defaults: hypothesis runs are derandomized (same examples every run, so CI
is reproducible), have no per-example deadline (machines are shared and noisy), and print
the blob needed to reproduce a failure."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ember",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile("explore", deadline=None, derandomize=False, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ember"))

# Two test workers share two cores: torch's own thread pool would spin-wait against the other
# worker and slow some tests 100x, so the reference library runs single-threaded.
import torch  # noqa: E402

torch.set_num_threads(1)
