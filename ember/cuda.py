"""ember.cuda: GPU support through CuPy, when both CuPy and a GPU are present."""


def is_available():
    """True when CuPy is installed and sees a GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def device_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def check_available():
    raise RuntimeError("ember: the cuda device is not supported yet in this build (tensors live "
                       "on cpu only)")


def _xp():
    check_available()


def manual_seed(seed):
    pass


def manual_seed_all(seed):
    pass


def synchronize(device=None):
    pass


# ---- memory (torch.cuda's names) ----
# ember has no cuda tensors yet, so these behave as torch's do on a machine without a GPU:
# the counters read 0 and memory_stats() is empty (torch returns {} before CUDA is
# initialised); what needs a device raises (torch raises too: RuntimeError on a CUDA build
# without a driver, an AttributeError/AssertionError on a CPU-only build; ember raises the
# RuntimeError of check_available). ember.memory has the same API for cpu tensors.
def memory_allocated(device=None):
    """Bytes held by cuda tensors: 0 (no cuda device)."""
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def memory_stats(device=None):
    """torch's memory_stats(): empty until a cuda device has been used (never, here)."""
    from collections import OrderedDict
    return OrderedDict()


def memory_stats_as_nested_dict(device=None):
    return {}


def empty_cache():
    """Nothing cached: does nothing, as torch does without CUDA."""


def memory_summary(device=None, abbreviated=False):
    check_available()


def reset_peak_memory_stats(device=None):
    check_available()


def reset_max_memory_allocated(device=None):
    check_available()


def reset_accumulated_memory_stats(device=None):
    check_available()


def memory_snapshot(mempool_id=None, include_traces=True):
    check_available()


def mem_get_info(device=None):
    check_available()


class _Memory:
    """``ember.cuda.memory``: torch.cuda.memory's private history and snapshot calls."""
    memory_allocated = staticmethod(memory_allocated)
    max_memory_allocated = staticmethod(max_memory_allocated)
    memory_reserved = staticmethod(memory_reserved)
    memory_stats = staticmethod(memory_stats)
    memory_summary = staticmethod(memory_summary)
    reset_peak_memory_stats = staticmethod(reset_peak_memory_stats)
    empty_cache = staticmethod(empty_cache)

    @staticmethod
    def _record_memory_history(enabled="all", *args, **kwargs):
        check_available()

    @staticmethod
    def _snapshot(device=None, augment_with_fx_traces=False):
        check_available()

    @staticmethod
    def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
        check_available()


memory = _Memory()
