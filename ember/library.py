"""Custom ops (torch.library's API): a Python function, or a C kernel, made into a registry op.

    @ember.library.custom_op("mylib::swish", mutates_args=())
    def swish(x: ember.Tensor) -> ember.Tensor:
        y = ember.empty_like(x)
        lib.swish_fwd(x, y, x.numel())     # e.g. a C kernel (ember.utils.cpp_extension)
        return y

    @swish.register_fake
    def _(x):
        return ember.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return swish_backward(x, grad)

    swish.register_autograd(backward, setup_context=setup_context)

    swish(x); ember.ops.mylib.swish(x)          # the same op

The op is an `OpDef` of kind EXTERN named ``"mylib::swish"`` in ember's registry
(ember/ops/registry.py), published behind the mode seam: the profiler times it as
``ember::mylib::swish``, the compiler's tracer records it as one opaque call that the compiled
function runs as it is (an extern call between fused kernels), and `ember.ops.mylib.swish`
reaches it like ``torch.ops.mylib.swish``.

Autograd: with `register_autograd`, a call whose tensor inputs require grad runs the kernel
without recording and links the outputs to one node (PyTorch's name for it:
``GeneratedBackwardFor_mylib_swish_defaultBackward``) that calls your
`backward` (autograd.Function's machinery). Without it, the outputs still get a node, whose
backward raises (PyTorch's behaviour), so a missing derivative is never silently zero.

`register_fake` gives the op's meta rule (``OpDef.meta``): ember has no fake tensors, so it is
called on the real inputs and must return tensors of the right shape and dtype without
computing (``ember.empty_like``...). `opcheck` checks it, the mutation declaration and the
backward against the kernel.

Deployment: `ember.export`/`ember.jit` record the op as one call node and save it by its
name; loading resolves the name to the op registered in the loading process (define or
import it first; a file never carries code). `register_onnx` (or
``ember.onnx.register_custom_op_symbolic``) gives its ONNX mapping.
"""
import inspect

import numpy as np

from . import ops as _ops_package
from .autograd.function import Function
from .autograd.grad_mode import state
from .core.tensor import Tensor
from .ops.onnx_rules import Unsupported
from .ops.registry import BY_NAME, EXTERN, OPS, OpDef, register

__all__ = ["custom_op", "CustomOpDef", "opcheck"]


class _Namespace:
    """``ember.ops.<namespace>``: the custom ops of one namespace as attributes."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"<ember.ops.{self._name}>"


def _namespace(ns):
    space = getattr(_ops_package, ns, None)
    if space is None:
        space = _Namespace(ns)
        setattr(_ops_package, ns, space)
    elif not isinstance(space, _Namespace):
        raise ValueError(f"custom_op: namespace {ns!r} is taken by ember.ops.{ns}")
    return space


def _parse_name(qualname):
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"custom_op: expected a name 'namespace::name', got {qualname!r}")
    ns, name = qualname.split("::")
    if not (ns.isidentifier() and name.isidentifier()):
        raise ValueError(f"custom_op: {qualname!r}: the namespace and the name must be "
                         "Python identifiers")
    return ns, name


def _annotation_text(a):
    if a is inspect.Parameter.empty:
        return "Any"
    if a is Tensor:
        return "Tensor"
    return getattr(a, "__name__", str(a))


class CustomOpDef:
    """A custom op made by `custom_op`; call it like the function it wraps."""

    def __init__(self, namespace, name, fn, mutates_args, device_types, schema):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._init_fn = fn
        self._signature = inspect.signature(fn)
        params = list(self._signature.parameters)
        self._nparams = len(params)
        if schema is None:
            for n, prm in self._signature.parameters.items():
                if prm.annotation is inspect.Parameter.empty:
                    raise ValueError(f"infer_schema(func): Parameter {n} must have a type "
                                     f"annotation. Got func with signature {self._signature})")
        if mutates_args == "unknown":
            self._mutates = "unknown"
        else:
            if isinstance(mutates_args, str):
                raise ValueError("mutates_args must either be a sequence of the names of the "
                                 "arguments that are mutated or the string 'unknown'. ")
            self._mutates = tuple(mutates_args)
            unknown = set(self._mutates) - set(params)
            if unknown:
                raise ValueError(f"infer_schema(func): {unknown} in mutates_args were not "
                                 "found in the custom op's signature. mutates_args should "
                                 "contain the names of all args that the custom op mutates, "
                                 "or just the string 'unknown' if you don't know.")
        self._schema = schema or self._infer_schema()
        self._kernels = {}                # device type -> fn over ember tensors
        for dt in _device_list(device_types):
            self._kernels[dt] = fn
        self._fake = None
        self._backward = self._setup_context = None
        self._function = None
        self._onnx = {}                   # first opset version -> ONNX mapping (register_onnx)
        self.__name__ = name
        self.__doc__ = fn.__doc__
        self._opdef = OpDef(self._qualname, EXTERN, inputs=tuple(params), method=False,
                            function=False, impure=bool(self._mutates),
                            node_name=f"GeneratedBackwardFor_{namespace}_{name}_defaultBackward",
                            doc=fn.__doc__)
        self._opdef.custom = self
        if self._qualname in OPS:
            raise RuntimeError(f"custom_op: an op named {self._qualname} is already "
                               "registered")
        space = _namespace(namespace)      # checked before anything is registered

        def op_call(*args, **kwargs):
            return self._call(args, kwargs)
        self._public = register(self._opdef, op_call)
        setattr(space, name, self)
        self.default = self           # torch.ops.ns.name.default

    # ---- the torch.library registrations ----
    def register_kernel(self, device_types, fn=None, /):
        """The kernel for `device_types` ("cpu", "cuda", or a list); a decorator when `fn`
        is omitted. Replaces the function given to `custom_op` for those devices."""
        def inner(f):
            for dt in _device_list(device_types) or ("cpu", "cuda"):
                self._kernels[dt] = f
            return f
        return inner(fn) if fn is not None else inner

    def register_fake(self, fn, /):
        """The op's meta rule: returns tensors with the output's shape and dtype without
        computing them (stored as the OpDef's `meta`). Returns `fn` (decorator use)."""
        self._fake = fn
        self._opdef.meta = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """``backward(ctx, *grads)`` returns one gradient per input (None for non-tensor
        inputs); ``setup_context(ctx, inputs, output)`` saves what it needs on ctx
        (``ctx.save_for_backward``) after the forward ran."""
        if not callable(backward):
            raise TypeError("register_autograd: backward must be callable")
        if self._mutates:
            raise RuntimeError(f"{self._qualname}: register_autograd is not supported for "
                               "ops that mutate their inputs (mutates_args)")
        self._backward, self._setup_context = backward, setup_context
        self._function = None

    def register_onnx(self, fn=None, /, *, opset_version=None):
        """The op's ONNX mapping (an ember extension; ``ember.onnx.register_custom_op_symbolic``
        calls it): ``fn(g, *args, **kwargs)`` gets the op's arguments with tensors as ONNX
        values and builds nodes with ``g.op("Sin", x)`` (ember/onnx/builder.py), returning
        the result's value(s); ``g.op("mylib::myop", x, attr=...)`` writes a node in the
        custom domain ``mylib`` instead. With `opset_version`, `fn` serves that opset and
        later ones (the latest registration at or below the export's opset is used). Stored
        as the OpDef's ``onnx`` field. A decorator when `fn` is omitted.

        >>> @twice.register_onnx
        ... def _(g, x):
        ...     return g.op("Mul", x, g.const(2.0, x.dtype))
        """
        def inner(f):
            if not callable(f):
                raise TypeError(f"{self._qualname}: register_onnx expects a function "
                                f"(g, *args, **kwargs), got {type(f).__name__}")
            self._onnx[0 if opset_version is None else int(opset_version)] = f
            self._opdef.onnx = self._onnx_mapping
            return f
        return inner(fn) if fn is not None else inner

    def _unregister_onnx(self, opset_version=None):
        self._onnx.pop(0 if opset_version is None else int(opset_version), None)
        if not self._onnx:
            self._opdef.onnx = None

    def _onnx_mapping(self, g, *args, **kwargs):
        usable = [v for v in self._onnx if v <= g.opset]
        if not usable:
            raise Unsupported(f"its ONNX mapping is registered for opset "
                              f"{min(self._onnx)} and later, not for opset {g.opset}")
        return self._onnx[max(usable)](g, *args, **kwargs)

    # ---- calling ----
    def __call__(self, *args, **kwargs):
        return self._public(*args, **kwargs)

    def _kernel_for(self, args):
        device = "cpu"
        for a in args:
            if isinstance(a, Tensor):
                device = a.device.type
                break
        kernel = self._kernels.get(device)
        if kernel is None:
            raise NotImplementedError(f"{self._qualname}: no kernel registered for device "
                                      f"type {device!r} (registered: "
                                      f"{', '.join(sorted(self._kernels)) or 'none'})")
        return kernel

    def _call(self, args, kwargs):
        if kwargs or len(args) != self._nparams:
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{self._qualname}(): {exc}") from None
            bound.apply_defaults()
            flat = tuple(bound.arguments.values())
        else:
            flat = args       # every argument given by position: nothing to bind
        kernel = self._kernel_for(flat)
        needs_graph = state.enabled and any(isinstance(a, Tensor) and a._requires_grad
                                           for a in flat)
        if not needs_graph:
            return self._run(kernel, flat)
        return self._autograd_function().apply(kernel, *flat)

    def _run(self, kernel, flat):
        out = kernel(*flat)
        if self._mutates:
            names = (self._signature.parameters if self._mutates == "unknown"
                     else self._mutates)
            for n, a in zip(self._signature.parameters, flat):
                if n in names and isinstance(a, Tensor):
                    a._bump_version()     # saved copies of it are now stale
        return out

    def _autograd_function(self):
        if self._function is None:
            op = self

            def forward(kernel, *flat):
                return op._run(kernel, flat)

            def setup_context(ctx, inputs, output):
                if op._setup_context is not None:
                    op._setup_context(ctx, inputs[1:], output)

            def backward(ctx, *grads):
                if op._backward is None:
                    raise RuntimeError(
                        f"Trying to backward through {op._namespace}.{op._name}.default but "
                        "no autograd formula was registered. Please use register_autograd to "
                        "add one.")
                res = op._backward(ctx, *grads)
                return (None,) + (tuple(res) if isinstance(res, (tuple, list)) else (res,))

            # the ctx (the graph node) gets PyTorch's name for a custom op's node:
            # GeneratedBackwardFor_<ns>_<name>_defaultBackward
            self._function = type(f"GeneratedBackwardFor_{self._namespace}_{self._name}_default",
                                  (Function,),
                                  {"forward": staticmethod(forward),
                                   "setup_context": staticmethod(setup_context),
                                   "backward": staticmethod(backward)})
        return self._function

    def _destroy(self):
        """Remove the op from the registry and from ember.ops.<namespace> (for tests: the
        name may then be defined again)."""
        if OPS.get(self._qualname) is self._opdef:
            del OPS[self._qualname]
        if BY_NAME.get(self._qualname) is self._opdef:
            del BY_NAME[self._qualname]
        space = getattr(_ops_package, self._namespace, None)
        if isinstance(space, _Namespace) and getattr(space, self._name, None) is self:
            delattr(space, self._name)
            if not vars(space).keys() - {"_name"}:
                delattr(_ops_package, self._namespace)

    # ---- description ----
    def _infer_schema(self):
        parts = [f"{_annotation_text(p.annotation)} {n}"
                 for n, p in self._signature.parameters.items()]
        ret = _annotation_text(self._signature.return_annotation)
        return f"({', '.join(parts)}) -> {ret}"

    @property
    def schema(self):
        return self._schema

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"


def _device_list(device_types):
    if device_types is None:
        return ("cpu", "cuda")
    if isinstance(device_types, str):
        return (device_types,)
    return tuple(device_types)


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Make `fn` an op named ``"namespace::name"`` (a decorator when `fn` is omitted).

    `mutates_args`: the names of the arguments the function writes into (``()`` for none,
    or ``"unknown"``); their version counters are bumped after each call. `device_types`:
    the devices `fn` is the kernel for (default: all). `schema`: a description string kept as
    ``op.schema`` (default: inferred from the annotations). `tags` is accepted and ignored.

    >>> @ember.library.custom_op("demo::twice", mutates_args=())
    ... def twice(x: ember.Tensor) -> ember.Tensor:
    ...     return x * 2
    >>> ember.ops.demo.twice(ember.ones(2)).tolist()
    [2.0, 2.0]
    """
    ns, opname = _parse_name(name)

    def inner(f):
        return CustomOpDef(ns, opname, f, mutates_args, device_types, schema)
    return inner(fn) if fn is not None else inner


def _tensors(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    return []


def opcheck(op, args, kwargs=None, *, atol=1e-5, rtol=1e-3):
    """Check a custom op on sample inputs (torch.library.opcheck's role): its fake (meta)
    rule gives the kernel's output shapes and dtypes, it writes only into the arguments named
    in mutates_args, and its registered backward agrees with finite differences (when the
    floating inputs are float64). Raises AssertionError naming what disagreed.

    >>> ember.library.opcheck(twice, (ember.randn(3, dtype=ember.float64),))  # doctest: +SKIP
    """
    if not isinstance(op, CustomOpDef):
        raise TypeError(f"opcheck: expected a CustomOpDef, got {type(op).__name__}")
    kwargs = kwargs or {}
    bound = op._signature.bind(*args, **kwargs)
    before = {n: v._data.copy() for n, v in bound.arguments.items() if isinstance(v, Tensor)}
    from .autograd.grad_mode import no_grad
    with no_grad():
        out = op(*args, **kwargs)
    mutated = op._mutates if op._mutates != "unknown" else tuple(before)
    for n, old in before.items():
        if n not in mutated and not np.array_equal(old, bound.arguments[n]._data,
                                                   equal_nan=True):
            raise AssertionError(f"opcheck({op._qualname}): argument {n!r} was written to "
                                 "but is not in mutates_args")
    if op._fake is not None:
        fake = op._fake(*args, **kwargs)
        real_t, fake_t = _tensors(out), _tensors(fake)
        if len(real_t) != len(fake_t):
            raise AssertionError(f"opcheck({op._qualname}): the fake returns {len(fake_t)} "
                                 f"tensors, the kernel {len(real_t)}")
        for i, (r, f) in enumerate(zip(real_t, fake_t)):
            if tuple(r.shape) != tuple(f.shape) or r.dtype is not f.dtype:
                raise AssertionError(
                    f"opcheck({op._qualname}): output {i}: the fake gives "
                    f"{f.dtype}{list(f.shape)}, the kernel {r.dtype}{list(r.shape)}")
    floats = [t for t in _tensors(list(bound.arguments.values())) if t.dtype.is_floating_point]
    if op._backward is not None and floats and all(t.dtype.itemsize == 8 for t in floats):
        from .autograd.gradcheck import gradcheck
        names = [n for n, v in bound.arguments.items()
                 if isinstance(v, Tensor) and v.dtype.is_floating_point]
        leaves = [bound.arguments[n].detach().requires_grad_(True) for n in names]

        def f(*xs):
            call = dict(bound.arguments)
            call.update(zip(names, xs))
            return op(**call)
        if not gradcheck(f, tuple(leaves), atol=atol, rtol=rtol, raise_exception=False):
            raise AssertionError(f"opcheck({op._qualname}): the registered backward "
                                 "disagrees with finite differences")
    return True
