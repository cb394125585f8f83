"""TorchScript's decorators, type markers and helpers that have nothing to do when capture
traces ordinary Python (ember.jit): each is the identity, a plain context manager, or the
obvious eager equivalent (``fork`` runs the call now and ``wait`` returns its result).

>>> @ember.jit.ignore
... def debug(x): print(x)
"""
import builtins
import contextlib
import typing


def ignore(drop=False, **kwargs):
    """Leave a function to Python (it always is, here)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    """torch.jit.export marks a method to compile besides forward: the identity here."""
    return fn


def script_method(fn):
    return fn


def script_if_tracing(fn):
    return fn


def interface(obj):
    return obj


def is_scripting():
    """False: ember never runs code as TorchScript (torch.jit.is_scripting outside script)."""
    return False


def is_tracing():
    return False


def annotate(the_type, the_value):
    return the_value


def Attribute(value, type=None):          # noqa: N802 (torch's name)
    return value


Final = typing.Final
isinstance = builtins.isinstance


class TracerWarning(Warning):
    pass


class ScriptWarning(Warning):
    pass


class TracingCheckError(Exception):
    pass


Error = RuntimeError


class Future:
    """What ``fork`` returns: the call's result, already computed."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    return Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


@contextlib.contextmanager
def optimized_execution(should_optimize):
    yield


@contextlib.contextmanager
def fuser(name):
    yield


@contextlib.contextmanager
def strict_fusion():
    yield


_onednn = [False]
_strategy = [[("STATIC", 2), ("DYNAMIC", 10)]]


def enable_onednn_fusion(enabled):
    _onednn[0] = bool(enabled)


def onednn_fusion_enabled():
    return _onednn[0]


def set_fusion_strategy(strategy):
    old, _strategy[0] = _strategy[0], list(strategy)
    return old


__all__ = ["ignore", "unused", "export", "script_method", "script_if_tracing", "interface",
           "is_scripting", "is_tracing", "annotate", "Attribute", "Final", "isinstance",
           "TracerWarning", "ScriptWarning", "TracingCheckError", "Error", "Future", "fork",
           "wait", "optimized_execution", "fuser", "strict_fusion", "enable_onednn_fusion",
           "onednn_fusion_enabled", "set_fusion_strategy"]
