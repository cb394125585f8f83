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
