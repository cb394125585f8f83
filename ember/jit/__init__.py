"""ember.jit: TorchScript's API over ember.export. A ScriptModule is an exported program
with the module interface: it runs without the model's class, prints its graph and code, and
saves to the export file format.

    traced = ember.jit.trace(model, (x,))          # capture on example inputs
    scripted = ember.jit.script(model)             # captured on the first call
    traced.save("model.pt"); m = ember.jit.load("model.pt")   # no class needed
    fast = ember.jit.optimize_for_inference(ember.jit.freeze(traced.eval()))

Differences from TorchScript: script captures by tracing (the compiler's capture) at the first
call, so Python that depends on tensor values raises an error naming the line at that call,
not at script time; trace keeps the batch dim dynamic where the model allows it, other sizes
are fixed at the example's.
"""
import io

from ..core.tensor import Tensor
from ..nn.modules.module import Module
from ..export import export as _export, save as _save, load as _load, Dim, ConstraintViolationError
from ..export._export import _FunctionModule
from ..export.program import ExportedModule, readable


class ScriptModule(Module):
    """A module running a captured program (torch.jit.ScriptModule's role); its parameters
    and buffers are the program's, under the original names."""

    def __init__(self, ep=None, original=None, name=None):
        super().__init__()
        self.__dict__["_ep"] = None
        self.__dict__["_runner"] = None
        self.__dict__["_original"] = original
        self.__dict__["original_name"] = name or type(original).__name__ if original is not \
            None else name or "Module"
        # the captured graph is fixed in the mode it was traced in; the flag follows it
        self.training = original.training if original is not None else False
        if ep is not None:
            self._set(ep)

    def _set(self, ep):
        runner = ExportedModule(ep)
        self.__dict__["_ep"] = ep
        self.__dict__["_runner"] = runner
        self._parameters, self._buffers = runner._parameters, runner._buffers
        self._modules = runner._modules
        self._non_persistent_buffers_set = runner._non_persistent_buffers_set

    def _capture(self, args, kwargs):
        raise RuntimeError("this ScriptModule has no program: call it on inputs first")

    @property
    def graph(self):
        """The captured Graph (prints as Python)."""
        return self._program().graph

    @property
    def code(self):
        """The forward as Python source."""
        return readable(self._program(), cls=False)

    @property
    def inlined_graph(self):
        return self.graph

    def _program(self):
        if self._ep is None:
            raise RuntimeError(f"ember.jit: {self.original_name} is scripted but not captured "
                               f"yet: call it once on example inputs first")
        return self._ep

    def forward(self, *args, **kwargs):
        if self._ep is None:
            self._capture(args, kwargs)
        return self._runner(*args, **kwargs)

    def save(self, f, _extra_files=None):
        """Write the program to `f` (the ember.export file format)."""
        _save(self._program(), f, extra_files=_extra_files)

    def save_to_buffer(self):
        buf = io.BytesIO()
        self.save(buf)
        return buf.getvalue()

    def __repr__(self):
        return f"RecursiveScriptModule(original_name={self.original_name})"


class _LazyScriptModule(ScriptModule):
    """`script(module)`: captured (exported) at its first call, with the batch dim dynamic
    where the model allows; a call that the capture does not cover (other sizes) captures
    again, as a scripted module serves any input."""

    def _capture(self, args, kwargs):
        self._set(_export_flexible(self._original, tuple(args), kwargs))

    def forward(self, *args, **kwargs):
        if self._ep is None:
            self._capture(args, kwargs)
        try:
            self._ep._flat_inputs(args, kwargs)
        except (AssertionError, ValueError):
            self._capture(args, kwargs)
        return self._runner(*args, **kwargs)


class ScriptFunction:
    """`script(fn)` / `trace(fn, ...)`: a function running a captured program."""

    def __init__(self, fn, ep=None):
        self._fn, self._module = fn, None
        self.__name__ = getattr(fn, "__name__", "fn")
        self.__doc__ = getattr(fn, "__doc__", None)
        if ep is not None:
            self._module = ScriptModule(ep, name=self.__name__)

    def __call__(self, *args, **kwargs):
        if self._module is None:
            self._module = ScriptModule(_export(_FunctionModule(self._fn), tuple(args), kwargs),
                                        name=self.__name__)
        return self._module(*args, **kwargs)

    @property
    def graph(self):
        return self._script().graph

    @property
    def code(self):
        return self._script().code

    def save(self, f):
        self._script().save(f)

    def _script(self):
        if self._module is None:
            raise RuntimeError(f"ember.jit: {self.__name__} is scripted but not captured yet: "
                               f"call it once first")
        return self._module


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Script a Module or function: its forward is captured by the compiler's tracer (at the
    first call, or now on `example_inputs`); Python that reads tensor values raises an error
    naming the user's line.

    >>> sm = ember.jit.script(model); y = sm(x); print(sm.code)
    """
    if isinstance(obj, ScriptModule) or isinstance(obj, ScriptFunction):
        return obj
    if isinstance(obj, Module):
        sm = _LazyScriptModule(original=obj)
        if example_inputs:
            sm._capture(tuple(example_inputs[0]), {})
        return sm
    if callable(obj):
        sf = ScriptFunction(obj)
        if example_inputs:
            sf(*example_inputs[0])
        return sf
    raise RuntimeError(f"ember.jit.script: cannot script a {type(obj).__name__}")


def _as_args(example_inputs):
    if isinstance(example_inputs, Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    if not isinstance(example_inputs, tuple):
        return (example_inputs,)
    return example_inputs


def _batch_dynamic(args):
    """dim 0 of every tensor input (size >= 2) as one Dim.AUTO-like "batch" spec."""
    batch = Dim("batch")
    return tuple({0: batch} if isinstance(a, Tensor) and a.dim() and a.shape[0] >= 2 else None
                 for a in args)


def _export_flexible(mod, args, kwargs):
    """Export with the batch dim dynamic when every tensor input shares it; otherwise (or
    when the model specializes it) with static sizes."""
    sizes = {a.shape[0] for a in args if isinstance(a, Tensor) and a.dim()}
    if len(sizes) == 1 and not kwargs and sizes.pop() >= 2 and all(
            isinstance(a, Tensor) for a in args):
        try:
            return _export(mod, args, dynamic_shapes=_batch_dynamic(args))
        except ConstraintViolationError:
            pass
    return _export(mod, args, kwargs)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False,
          _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):
    """Capture `func` (a Module or function) by running it on `example_inputs`.

    >>> traced = ember.jit.trace(model, (x,)); traced.save("m.pt")
    """
    args = _as_args(example_inputs) if example_inputs is not None else ()
    kwargs = dict(example_kwarg_inputs or {})
    if isinstance(func, ScriptModule):
        return func
    if isinstance(func, Module):
        ep = _export_flexible(func, args, kwargs)
        return ScriptModule(ep, original=func)
    if callable(func):
        return ScriptFunction(func, _export_flexible(_FunctionModule(func), args, kwargs))
    raise RuntimeError(f"ember.jit.trace: cannot trace a {type(func).__name__}")


def trace_module(mod, inputs, **kw):
    return trace(mod, inputs.get("forward"), **kw)


def load(f, map_location=None, _extra_files=None):
    """Load a ScriptModule saved by `ScriptModule.save` (or an ember.export file); the
    model's class is not needed.

    >>> m = ember.jit.load("model.pt"); y = m(x)
    """
    return ScriptModule(_load(f, extra_files=_extra_files))


def _copy_program(ep):
    buf = io.BytesIO()
    _save(ep, buf)
    buf.seek(0)
    copy_ = _load(buf)
    copy_.example_inputs = ep.example_inputs
    return copy_


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """A copy of the ScriptModule whose parameters are constants (no grad), for inference.

    >>> frozen = ember.jit.freeze(ember.jit.script(model.eval()))
    """
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "ember.jit.script or ember.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    ep = _copy_program(mod._program())
    out = ScriptModule(ep, original=mod._original, name=mod.original_name)
    for p in out.parameters():
        p.requires_grad_(False)
    out.eval()
    out.__dict__["_frozen"] = True
    return out


def optimize_for_inference(mod, other_methods=None):
    """Freeze (if needed), fold each BatchNorm that follows a convolution into the
    convolution's weight and bias, and run the program compiled (ember.compile); the result
    computes the same outputs (to rounding).

    >>> fast = ember.jit.optimize_for_inference(ember.jit.trace(cnn.eval(), (x,)))
    """
    from .fold import fold_conv_bn
    if not getattr(mod, "_frozen", False):
        mod = freeze(mod)
    original, ep = mod._original, mod._program()
    if original is None or ep.example_inputs is None:
        return _fused(mod)
    args, kwargs = ep.example_inputs
    folded, n = fold_conv_bn(original, args, kwargs)
    if not n:
        return _fused(mod)
    out = freeze(ScriptModule(_export_flexible(folded, args, kwargs), original=folded,
                              name=mod.original_name))
    out.__dict__["folded_batch_norms"] = n
    return _fused(out)


def _fused(sm):
    """The ScriptModule's program run by ember.compile (fused C kernels; the numpy backend
    where no C compiler works): what TorchScript's fusion passes do for it."""
    from ..compiler import compile as _compile
    sm.__dict__["_runner"] = _compile(sm._runner)
    return sm


def save(m, f, _extra_files=None):
    """``m.save(f)`` (torch.jit.save)."""
    m.save(f, _extra_files)


def export_opnames(m):
    """The registered names of the ops the ScriptModule's graph calls."""
    return sorted({n.opname for n in m.graph.calls()})


def run_frozen_optimizations(mod, optimize_numerics=True, preserved_methods=None):
    return mod


from ._markers import *  # noqa: E402,F401,F403  (TorchScript's decorators and helpers)
from ._markers import export  # noqa: E402,F401  (the decorator, not ember.export)

RecursiveScriptModule = ScriptModule
TopLevelTracedModule = TracedModule = ScriptModule

__all__ = ["trace", "script", "load", "save", "freeze", "optimize_for_inference",
           "ScriptModule", "ScriptFunction", "ignore", "unused", "export", "is_scripting",
           "is_tracing", "annotate"]
