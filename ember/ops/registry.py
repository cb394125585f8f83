"""The op registry: every op is defined once, as an OpDef, and everything else is generated.

An OpDef holds the op's PyTorch name and kind, its kernel over backend arrays, its meta rule
(shape/dtype from metadata alone), its derivative formulas (one per differentiable input,
written with ember ops, like PyTorch's derivatives.yaml), and room for a compiler lowering and
an ONNX mapping. `register` builds the public function from the record (dispatch.py) and
installs it as `ember.<name>`, as the Tensor method and as the in-place `<name>_` method.
"""
import inspect

from ..dispatch import with_autocast, with_mode_seam
from ..autograd.derivative import Derivative, derivatives_of
from . import meta_rules as _meta_rules
from . import dtype_support as _dtype_support

# autocast policies (OpDef.amp): run in the autocast dtype, or in float32 with autocast off
LOWER_PRECISION = "lower_precision"
FP32 = "fp32"

POINTWISE = "pointwise"
REDUCTION = "reduction"
VIEW = "view"
EXTERN = "extern"
CREATION = "creation"
RANDOM = "random"
COMPOSITE = "composite"

# OpDef.jvp values besides a formula (ember/autograd/forward_ad.py reads them): the op is
# linear in its floating-point tensor inputs taken together (its tangent is the op applied
# to the tangents: cat, sum, views), or linear in each separately (mm, einsum: the sum over
# inputs of the op with one input replaced by its tangent). VIEW ops are LINEAR by default.
LINEAR = "linear"
MULTILINEAR = "multilinear"
# OpDef.jvp = NO_FORWARD_AD: forward AD refuses the op (torch's NotImplementedError), for ops
# whose derivative is a convention, not the derivative of the forward computation (ctc_loss)
NO_FORWARD_AD = "no_forward_ad"

OPS = {}            # name -> OpDef
FUNCTIONS = {}      # public name -> callable, exported into the ember namespace
METHODS = {}        # Tensor method name -> callable
BY_NAME = {}        # every function, method and overload name -> its OpDef (see `op_for`)


class OpDef(Derivative):
    """One op's whole definition. See DESIGN.md ("The op registry") for each field's role.

    Fields, and who reads them:
    - ``name``, ``kind`` (POINTWISE, REDUCTION, VIEW, EXTERN, CREATION, RANDOM, COMPOSITE),
      ``overloads`` (every other public or method name this op answers to, ``__mul__``
      included): the registry resolves any of them to this record (`op_for`);
    - ``kernels``: {backend name: kernel(xp, *arrays, **attrs)}; ``kernel`` is the "numpy" one
      (cpu). A CuPy kernel goes next to it under "cupy";
    - ``meta``: output shape/dtype from metadata alone (dispatch, tracing, device="meta");
    - ``grads``: {input name, or a tuple of input names for a joint formula: formula}. A
      formula's parameter names say what it reads (inputs, "result", attributes), which is
      what the node saves (the derivative fields come from autograd's `Derivative`: an op
      is its own default backward template; ``derivatives`` lists the templates its
      function records); ``jvp``: forward-mode formula slot; ``batch``: vmap rule slot;
    - ``decomp``: the op written in other ember ops (required for COMPOSITE); ``fused``: an
      optional fast eager kernel, chosen by the op's choice function;
    - ``lower``: how the compiler emits the op (a C expression template for pointwise ops,
      a reduction's name, an extern symbol); ``amp``: the autocast policy ("lower_precision",
      "fp32", "promote" or None); ``onnx``: the export mapping slot;
    - ``impure`` (random or side-effecting: never CSE'd, never dropped by DCE; default: kind
      RANDOM), ``recompute`` (cheap enough for the partitioner to recompute in the backward
      instead of saving; default: POINTWISE and VIEW), ``fresh_result`` (the result is new
      memory and keeps no reference to the inputs, so the compiler may pool its inputs'
      buffers; default: POINTWISE, REDUCTION, EXTERN), ``scalars_as_tensors`` (PyTorch's node
      saves a Python-scalar operand as a 0-d tensor: mul, div);
    - ``holomorphic``: the ``grads`` formulas are the real-case ones (the incoming gradient
      times the local derivative; for a linear op, its transpose), and for a complex gradient
      the node applies them as ``conj(formula(conj(g)))``, which is torch's convention
      (conjugate Wirtinger) for holomorphic ops. False: the formulas already follow that
      convention for complex inputs (abs, angle, real, view_as_real, fft...), and run as
      written (autograd/graph.py);
    - facts about torch's function for the op, which decide the exception torch raises for
      bad input (read only after the op raised, by ember/dispatch_args.py's
      `argument_error` and `internal_error`; valid calls never read them):
      ``torch_python``: torch's function is Python code (torch/functional.py,
      nn/functional.py) that reads an attribute of some arguments before torch's parser sees
      them, so a str or list there is torch's AttributeError ('list' object has no attribute
      'size'), not the parser's TypeError: ``(the attribute, or one per position, the
      positions of the arguments it is read from[, when(args, kwargs): the calls where it
      is])``, or None; a non-tensor elsewhere reaches torch's parser (its TypeError). Found
      by calling torch with a str and a list in each tensor argument of the op's samples;
      ``uint64_scalars``: the Scalar parameters, where torch's parser takes an int up to
      2**64 - 1 (uint64), so the op's own error stands for 2**63 there (found by calling
      torch with 2**63); ``own_range_check``: int parameters whose int64 overflow the op
      reports itself, with torch's error (norm's dim); ``own_type_check``: the op's own error
      for a non-tensor argument is torch's (from_dlpack's, from its C++ side);
      ``bool_overload``: torch has an overload taking a bool where another takes an int
      (``std(x, True)`` is ``unbiased=True``, ``nuclear_norm(x, True)`` ``keepdim=True``),
      so a bool there is no wrong type. A method with no OpDef (fill_) sets the same
      attribute on its function, as it does ``jvp`` and ``batch``.
    """

    def __init__(self, name, kind, *, kernel=None, kernels=None, ufunc=None, meta=None,
                 grads=None, jvp=None, batch=None, inputs=("self",), attrs=None,
                 dtype_rule=None, decomp=None, fused=None, lower=None, amp=None, impure=None,
                 recompute=None, fresh_result=None, scalars_as_tensors=False, onnx=None,
                 overloads=(), node_name=None, method=True, function=True, inplace=False,
                 errstate=False, int_div_check=False, doc=None,
                 holomorphic=True, dtypes=None, dtype_kernel=None, dtypes_of="first",
                 torch_python=None, uint64_scalars=(), own_range_check=(),
                 own_type_check=False, bool_overload=False):
        # the derivative fields (grads, saves, inputs, attrs, node_name...): an op is its
        # own default backward template (ember/autograd/derivative.py)
        super().__init__(name, grads=grads, inputs=inputs, attrs=attrs,
                         node_name=node_name, holomorphic=holomorphic,
                         scalars_as_tensors=scalars_as_tensors)
        self.kind = kind
        self.overloads = tuple(overloads)
        self.kernels = dict(kernels or {})   # backend name -> kernel(xp, *arrays, **attrs)
        if kernel is not None:
            self.kernels["numpy"] = kernel
        self.ufunc = ufunc            # a NumPy ufunc equal to the kernel when no attrs are set
        self.meta = meta
        self.dtype_rule = dtype_rule
        self.decomp = decomp
        self.fused = fused
        self.lower = lower
        self.amp = amp
        self.jvp = jvp
        self.batch = batch
        self.onnx = onnx
        self.impure = (kind == RANDOM) if impure is None else impure
        self.recompute = (kind in (POINTWISE, VIEW)) if recompute is None else recompute
        self.fresh_result = ((kind in (POINTWISE, REDUCTION, EXTERN)) if fresh_result is None
                             else fresh_result)
        self.method = method
        self.function = function
        self.inplace = inplace
        self.errstate = errstate      # silence NumPy's floating-point warnings in the kernel
        self.int_div_check = int_div_check
        self.doc = doc
        # the dtypes the cpu kernel implements for its first tensor argument (None: what
        # the code accepts), and the kernel's name in torch's error (ops/dtype_support.py)
        self.dtypes = None if dtypes is None else frozenset(dtypes)
        self.dtype_kernel = dtype_kernel
        self.dtypes_of = dtypes_of      # which argument's dtype picks the kernel
        # torch's answers to bad input (ember/dispatch_args.py reads them after a raise)
        self.torch_python = torch_python
        self.uint64_scalars = frozenset(uint64_scalars)
        self.own_range_check = frozenset(own_range_check)
        self.own_type_check = own_type_check
        self.bool_overload = bool_overload
        self.fn = None

    @property
    def kernel(self):
        """The cpu (NumPy) kernel."""
        return self.kernels.get("numpy")

    @kernel.setter
    def kernel(self, fn):
        self.kernels["numpy"] = fn

    @property
    def derivatives(self):
        """The backward templates this op's function records: the op itself when it has
        formulas, and each `Derivative` that names it (``of=``), e.g. sum's SumBackward1."""
        return ((self,) if self.grads else ()) + derivatives_of(self.name)

    def __repr__(self):
        return f"OpDef({self.name!r}, {self.kind})"


def register(op, fn, *, names=None, method_names=None, inplace_fn=None):
    """Record `op` and publish its callable under its function and method names; returns the
    published function, which the caller binds to the op's name (``norm = register(OpDef(
    "norm", REDUCTION), norm)``, or `register_each` for several), so that calls from
    anywhere pass the mode seam (dispatch.with_mode_seam: a tracer or profiler sees them)
    and, for an op with an autocast policy (`amp`), dispatch.with_autocast."""
    # named (and documented) before wrapping: the wrappers copy both
    fn.__name__ = fn.__qualname__ = op.name
    if fn.__doc__ is None and op.doc:
        fn.__doc__ = op.doc
    if op.dtypes is not None and not getattr(fn, "_checks_dtypes", False):
        fn = _dtype_support.dtype_checked(op, fn)
    if op.amp is not None and not getattr(fn, "_autocasts", False):
        fn = with_autocast(op, fn)
    fn = with_mode_seam(op, fn)
    if op.meta is None:      # the rule the op's kind gives (ember/ops/meta_rules.py)
        op.meta = _meta_rules.derived(op)
    OPS[op.name] = op
    op.fn = fn
    if op.lower is not None and op.lower.prim is None:
        op.lower.prim = op.name
    for n in (op.name,) + op.overloads + tuple(names or ()) + tuple(method_names or ()):
        BY_NAME.setdefault(n, op)
    if op.function:
        for n in names or (op.name,):
            FUNCTIONS[n] = fn
    if op.method:
        for n in method_names or names or (op.name,):
            METHODS[n] = fn
    if inplace_fn is not None:
        inplace_fn.__name__ = op.name + "_"
        for n in method_names or names or (op.name,):
            METHODS[n + "_"] = inplace_fn
    return fn


def op_for(name):
    """The OpDef that the public name, method name or overload `name` calls, or None.

    >>> op_for("__mul__").name
    'mul'
    """
    return BY_NAME.get(name)


def register_each(namespace, kind, fns, **fields):
    """``register(OpDef(f.__name__, kind, **fields), f)`` for each function of `fns`, binding
    each published function to its name in `namespace` (the defining module's globals())."""
    for f in fns:
        namespace[f.__name__] = register(OpDef(f.__name__, kind, **fields), f)


def install_methods(tensor_cls):
    """Put every method on Tensor. Registered ops are published behind the mode seam already
    (`register`); the few methods set straight into METHODS (in-place variants, dtype
    shorthands) get it here, so a mode (tracer, profiler) sees every call."""
    for name, fn in list(METHODS.items()):
        METHODS[name] = fn = with_mode_seam(op_for(name) or name, fn)
        setattr(tensor_cls, name, fn)
    for name, fn in list(FUNCTIONS.items()):
        FUNCTIONS[name] = with_mode_seam(op_for(name) or name, fn)
