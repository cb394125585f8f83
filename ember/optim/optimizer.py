"""Optimizer base class: parameter groups, per-parameter state, state_dict and step hooks.

Subclasses implement `step(closure=None)`. The update kernels work on the parameters' NumPy
arrays (`p._data`, `p.grad._data`) with in-place ufuncs: an optimizer step is the hot loop
of training and going through the op dispatcher for every elementwise update would cost more
Python time than the arithmetic itself. Writing the arrays in place skips autograd, which
is what `no_grad` would give; each kernel then bumps the parameter's version counter so
saved-tensor checks still see the modification.
"""
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

import numpy as np

from ..core.tensor import Tensor
from ..autograd.grad_mode import state as _grad_state, call_mode


class _RequiredParameter:
    """Marks a hyper-parameter with no default (it must be given per group)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()
_hook_ids = iter(range(1 << 62))


class _RemovableHandle:
    def __init__(self, hooks_dict):
        self._dicts = hooks_dict
        self.id = next(_hook_ids)

    def remove(self):
        self._dicts.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_optimizer_step_pre_hook(hook):
    """Hook run before every optimizer's step: hook(optimizer, args, kwargs)."""
    h = _RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook):
    h = _RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[h.id] = hook
    return h


def _wrap_step(step):
    """Runs the step hooks around a subclass's step and marks the optimizer as stepped (the
    LR schedulers check that flag). The hook dicts are empty on the common path."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if _grad_state.modes:   # a compiler trace records the step as one opaque call
            return call_mode("optimizer.step", _plain_step, (self, wrapper, step) + args,
                             kwargs)
        self._opt_called = True
        pre = self._optimizer_step_pre_hooks
        if not (pre or _global_step_pre_hooks or self._optimizer_step_post_hooks
                or _global_step_post_hooks) or self.__dict__.get("_in_hooked_step"):
            # (a subclass's step calling super().step() runs the hooks once, not twice)
            return step(self, *args, **kwargs)
        self._in_hooked_step = True
        try:
            return _hooked(self, step, pre, args, kwargs)
        finally:
            self._in_hooked_step = False
    wrapper._wrapped_by_optimizer = True
    return wrapper


def _plain_step(self, wrapper, step, *args, **kwargs):
    """The step with its hooks, as `wrapper` runs it when no dispatch mode is active."""
    saved = _grad_state.modes
    _grad_state.modes = ()
    try:
        return wrapper(self, *args, **kwargs)
    finally:
        _grad_state.modes = saved


def _hooked(self, step, pre, args, kwargs):
    # torch hands the hooks the step's whole positional arguments, the optimizer first, and a
    # pre-hook's replacement args include it too
    args = (self,) + tuple(args)
    for hook in chain(_global_step_pre_hooks.values(), pre.values()):
        res = hook(self, args, kwargs)
        if res is not None:
            if not (isinstance(res, tuple) and len(res) == 2):
                raise RuntimeError(f"{hook} must return None or a tuple of (new_args, "
                                   f"new_kwargs), but got {res}.")
            args, kwargs = res
    out = step(*args, **kwargs)
    for hook in chain(self._optimizer_step_post_hooks.values(),
                      _global_step_post_hooks.values()):
        hook(self, args, kwargs)
    return out


def _typename(x):
    if isinstance(x, Tensor):
        return "ember." + type(x).__name__
    return type(x).__module__ + "." + type(x).__qualname__ if type(x).__module__ not in (
        "builtins",) else type(x).__qualname__


class Optimizer:
    """Base class of all optimizers: `Optimizer(params, defaults)`.

    `params` is an iterable of tensors, of (name, tensor) pairs, or of dicts (parameter
    groups, each may override entries of `defaults`).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_wrapped_by_optimizer", False):
            cls.step = _wrap_step(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_typename(params)}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n" + f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ---- parameter groups ----
    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        extracted, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str):
                names.append(p[0])
                extracted.append(p[1])
            else:
                extracted.append(p)
        if names:
            if len(names) != len(extracted):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        param_group["params"] = extracted
        for p in extracted:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and not (
                    p.is_leaf or p._retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(extracted) != len(set(extracted)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                raise ValueError("all optimizer param groups should be with/without names. "
                                 "cannot add param group with names to the optimizer")
        if not seen.isdisjoint(extracted):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        if _grad_state.modes:   # a compiler trace records it as one opaque call
            return call_mode("optimizer.zero_grad", type(self)._zero_grad, (self, set_to_none),
                             {})
        self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g.grad_fn is not None:
                        g = p._grad = g.detach()
                    else:
                        g.requires_grad_(False)
                    g._data[...] = 0
                    g._bump_version()

    def step(self, closure=None):
        raise NotImplementedError

    # ---- hooks ----
    def register_step_pre_hook(self, hook):
        h = _RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook):
        h = _RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[h.id] = hook
        return h

    def _register(self, hooks, hook, prepend):
        h = _RemovableHandle(hooks)
        hooks[h.id] = hook
        if prepend:
            hooks.move_to_end(h.id, last=False)
        return h

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- checkpointing ----
    def state_dict(self):
        """{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}; the state
        tensors are the optimizer's own (not copies), as in PyTorch."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                if id(p) not in index:
                    index[id(p)] = len(index)
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        packed_state = {(index[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        sd = {"state": packed_state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            out = hook(self, sd)
            if out is not None:
                sd = out
        return sd

    @staticmethod
    def _cast_state(param, value, key=None):
        # Floating state follows the parameter's dtype; `step` counters keep theirs.
        if isinstance(value, Tensor):
            if key != "step" and param.dtype.is_floating_point and value.dtype.is_floating_point \
                    and value.dtype is not param.dtype:
                return value.to(param.dtype)
            return value
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, v, key=k) for k, v in value.items()}
        if isinstance(value, (list, tuple)) and not isinstance(value, str):
            return type(value)(Optimizer._cast_state(param, v, key=key) for v in value)
        return value

    def load_state_dict(self, state_dict):
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast_state(param, v)
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


# ---- helpers shared by the update kernels ----
def _zeros_like(p):
    return Tensor._make(np.zeros(p._data.shape, p._data.dtype), p.dtype)


def _step_tensor():
    # PyTorch keeps the step count as a float32 0-dim tensor (Adam family, RMSprop, ...).
    from ..core import dtype as _dt
    return Tensor._make(np.zeros((), np.float32), _dt.float32)


def _incr_step(st):
    """Adds one to a state's `step` tensor in place; returns the new count as a float."""
    a = st._data
    a += 1
    st._bump_version()
    return float(a)


def _grads(group):
    """(param, param array, grad array) for the params of `group` that have a gradient."""
    out = []
    for p in group["params"]:
        g = p._grad
        if g is not None:
            out.append((p, p._data, g._data))
    return out


def _regularized_grad(g, x, wd, maximize, lr=0.0, decoupled=False):
    """The gradient an update uses: negated to maximize, plus L2 weight decay — or, when
    `decoupled` (AdamW style), the decay applied to the parameter array `x` in place."""
    if maximize:
        g = -g
    if wd != 0:
        if decoupled:
            x *= 1 - lr * wd
        else:
            g = g + wd * x
    return g


def _lerp_(a, end, w):
    """a <- lerp(a, end, w) in place with PyTorch's two-sided formula (exact at w=1)."""
    w = a.dtype.type(w)
    if w < 0.5:
        a += w * (end - a)
    else:
        np.subtract(end, (end - a) * (1 - w), out=a)


def _scalar(x):
    """A Python number from a float or a 0-dim tensor (lr may be given as a tensor)."""
    return x.item() if isinstance(x, Tensor) else x


def _eval_closure(closure):
    """Re-evaluates the closure with grad enabled (the step itself runs without)."""
    if closure is None:
        return None
    prev = _grad_state.enabled
    _grad_state.enabled = True
    try:
        return closure()
    finally:
        _grad_state.enabled = prev
