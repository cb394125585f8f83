"""The base class of the learning-rate schedulers (ember.optim.lr_scheduler.LRScheduler) and
the helpers every schedule shares.

A scheduler owns `last_epoch` (steps taken) and writes `group["lr"]` on each `step()`; the
schedules themselves live in lr_scheduler.py and lr_scheduler_cyclic.py.
"""
import warnings

from .optimizer import Optimizer
from ..autograd.grad_mode import state as _grad_state, call_mode

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the new "
    "chainable form, where available. Please open an issue if you are unable to replicate "
    "your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def _check_verbose(verbose):
    if verbose != "deprecated":
        warnings.warn("The verbose parameter is deprecated. Please use get_last_lr() to access "
                      "the learning rate.", UserWarning)


def _format_param(name, optimizer, param):
    """One value per param group (a scalar is repeated)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(param)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


class _LrCall:
    """Marks get_lr() as called from step() (a direct call warns)."""

    def __init__(self, sched):
        self.s = sched

    def __enter__(self):
        self.s._get_lr_called_within_step = True

    def __exit__(self, *exc):
        self.s._get_lr_called_within_step = False


def _opaque_step(step):
    """`step` recorded by a compiler trace as one opaque call (it changes Python state, the
    learning rates, that a replay of tensor ops alone would not change)."""
    import functools

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if _grad_state.modes:
            return call_mode("optimizer.scheduler_step", step, (self,) + args, kwargs)
        return step(self, *args, **kwargs)
    wrapper._opaque_step = True
    return wrapper


class LRScheduler:
    """Base class: subclasses implement get_lr() (and optionally _get_closed_form_lr())."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_opaque_step", False):
            cls.step = _opaque_step(step)
    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1, verbose="deprecated"):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _check_verbose(verbose)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def _warn_get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    @_opaque_step
    def step(self, epoch=None):
        if self._step_count == 1 and not self._is_initial and \
                not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                          "In PyTorch 1.1.0 and later, you should call them in the opposite "
                          "order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to "
                          "do this will result in PyTorch skipping the first value of the "
                          "learning rate schedule. See more details at https://pytorch.org/"
                          "docs/stable/optim.html#how-to-adjust-learning-rate", UserWarning)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        with _LrCall(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler  # legacy name
