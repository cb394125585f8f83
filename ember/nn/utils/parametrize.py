"""Parametrizations (``torch.nn.utils.parametrize``): a module's tensor computed on access.

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    m = nn.Linear(3, 3)
    register_parametrization(m, "weight", Symmetric())
    m.weight            # Symmetric()(m.parametrizations.weight.original), every access
    m.weight = A        # calls right_inverse (if the parametrization has one)

How: the module's class is swapped for a subclass ``Parametrized<Class>`` that has a
property per parametrized name; the tensor itself moves to
``module.parametrizations[name].original`` (a `ParametrizationList`, one entry per
parametrization, applied in registration order), so ``state_dict()`` keys become
``parametrizations.weight.original``, as in torch. ``with cached():`` computes each
parametrized tensor once inside the block.
"""
import collections.abc
import contextlib
import copy

from ...core.tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleList, ModuleDict
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Inside the block, each parametrized tensor is computed on first access and reused.

    >>> with cached():
    ...     out = model(x)     # a weight used many times (an RNN's) is computed once
    """
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_tensor(module, name, x):
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _set_into(dest, src):
    """Make `dest` hold `src`'s values, keeping the `dest` object (torch's ``dest.set_(src)``):
    a Parameter stays the same Parameter, so optimizers that hold it keep working."""
    dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its original value(s), ``original`` (or
    ``original0``, ``original1``... when the first ``right_inverse`` returns several).
    Made by `register_parametrization`; not meant to be built by hand."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the device.\noriginal.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                if new is not original:
                    _set_into(original, new)
            _register_tensor(self, "original", original)
        else:
            for i, x in enumerate(new):
                if not isinstance(x, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     "tensors (list, tuple...). Got element "
                                     f"{i} of the sequence with type {type(x).__name__}.")
                if isinstance(original, Parameter):
                    x = Parameter(x, original.requires_grad)
                x.requires_grad_(original.requires_grad)
                _register_tensor(self, f"original{i}", x)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype != dtype:
                raise ValueError("Registering a parametrization may not change the dtype of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {dtype}\nparametrized dtype: {z.dtype}")
            if z.shape != shape:
                raise ValueError("Registering a parametrization may not change the shape of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {shape}\nparametrized shape: {z.shape}")

    def right_inverse(self, value):
        """Store ``right_inverse`` of `value` (through every parametrization, last first) as
        the original(s): what ``module.weight = value`` runs."""
        with no_grad():
            for m in reversed(self):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                       "right_inverse.")
                value = m.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set_into(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, t in enumerate(value):
                orig = getattr(self, f"original{i}")
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or "
                                     f"reference-type opaques. Got element {i} of type "
                                     f"{type(t).__name__}.")
                if orig.dtype != t.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{t.dtype} while `original{i}` has dtype {orig.dtype}")
                _set_into(orig, t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _getstate(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _default_deepcopy(self, memo):
    # pickling is refused (_getstate), so deepcopy copies the __dict__ itself, as torch's
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module):
    """Give `module` its own subclass, where the properties of its parametrized names go."""
    cls = module.__class__
    attrs = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        attrs["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), attrs)


def _inject_property(module, name):
    if hasattr(module, name):
        raise AssertionError(f"Module already has an attribute named '{name}'")

    def get(self):
        p = self.parametrizations[name]
        if not _cache_enabled:
            return p()
        key = (id(self), name)
        t = _cache.get(key)
        if t is None:
            t = _cache[key] = p()
        return t

    def set(self, value):
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(get, set))


def _check_appended(module, name, p):
    """The checks of a parametrization added on top of existing ones (unsafe=False)."""
    y = getattr(module, name)
    x = p(y)
    if not isinstance(x, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
    if x.dtype != y.dtype:
        raise ValueError("Registering a parametrization may not change the dtype of the tensor, "
                         "unless the `unsafe` flag is enabled.\n"
                         f"module.{name}.dtype: {y.dtype}\n"
                         f"parametrization(module.{name}).dtype: {x.dtype}")
    if x.shape != y.shape:
        raise ValueError("Registering a parametrization may not change the shape of the tensor, "
                         "unless the `unsafe` flag is enabled.\n"
                         f"module.{name}.shape: {y.shape}\n"
                         f"parametrization(module.{name}).shape: {x.shape}")
    if hasattr(p, "right_inverse"):
        try:
            z = p.right_inverse(x)
        except NotImplementedError:
            return
        if not isinstance(z, Tensor):
            raise ValueError(f"parametrization.right_inverse must return a tensor. Got: "
                             f"{type(z).__name__}")
        for what, a, b in (("dtype", z.dtype, y.dtype), ("shape", z.shape, y.shape)):
            if a != b:
                raise ValueError(f"The tensor returned by parametrization.right_inverse must "
                                 f"have the same {what} as module.{name}, unless the `unsafe` "
                                 f"flag is enabled.\nmodule.{name}.{what}: {b}\n"
                                 f"returned {what}: {a}")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Compute ``module.<tensor_name>`` as ``parametrization(original)`` from now on.

    >>> m = nn.Linear(3, 3)
    >>> register_parametrization(m, "weight", Symmetric())     # doctest: +SKIP
    >>> bool((m.weight == m.weight.T).all())                    # doctest: +SKIP
    True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether `module` has a parametrization (on `tensor_name`, when given)."""
    ps = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(ps, ModuleDict):
        return False
    return len(ps) > 0 if tensor_name is None else tensor_name in ps


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo `register_parametrization` on `tensor_name`: the tensor becomes a plain
    parameter (buffer) again, holding its parametrized value (``leave_parametrized=True``)
    or its original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set_into(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization (its own class when there is none)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register `from_module`'s parametrizations (of `tensor_name`, or all) on `to_module`,
    sharing the originals; creates the parameter on `to_module` when it lacks it."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        src = from_module.parametrizations[name]
        for p in src:
            register_parametrization(to_module, name, p)
        dst = to_module.parametrizations[name]
        if hasattr(src, "original"):
            dst.original = src.original
        else:
            i = 0
            while hasattr(src, f"original{i}"):
                setattr(dst, f"original{i}", getattr(src, f"original{i}"))
                i += 1
    return to_module
