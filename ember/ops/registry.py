"""The op registry: every op is defined once, as an OpDef, and everything else is generated.

An OpDef holds the op's PyTorch name and kind, its kernel over backend arrays, its meta rule
(shape/dtype from metadata alone), its derivative formulas (one per differentiable input,
written with ember ops, like PyTorch's derivatives.yaml), and room for a compiler lowering and
an ONNX mapping. `register` builds the public function from the record (dispatch.py) and
installs it as `ember.<name>`, as the Tensor method and as the in-place `<name>_` method.
"""
import inspect

POINTWISE = "pointwise"
REDUCTION = "reduction"
VIEW = "view"
EXTERN = "extern"
CREATION = "creation"
RANDOM = "random"
COMPOSITE = "composite"

OPS = {}            # name -> OpDef
FUNCTIONS = {}      # public name -> callable, exported into the ember namespace
METHODS = {}        # Tensor method name -> callable


class OpDef:
    """One op's whole definition. See DESIGN.md ("The op registry") for each field's role."""

    def __init__(self, name, kind, *, kernel=None, ufunc=None, meta=None, grads=None,
                 inputs=("self",), attrs=None, dtype_rule=None, decomp=None, lower=None,
                 onnx=None, node_name=None, method=True, function=True, inplace=False,
                 errstate=False, int_div_check=False, doc=None):
        self.name = name
        self.kind = kind
        self.kernel = kernel          # kernel(xp, *arrays, **attrs) -> array
        self.ufunc = ufunc            # a NumPy ufunc equal to the kernel when no attrs are set
        self.meta = meta
        self.inputs = tuple(inputs)   # names of the tensor inputs, in order
        self.attrs = dict(attrs or {})  # non-tensor arguments with their defaults
        self.dtype_rule = dtype_rule
        self.decomp = decomp
        self.lower = lower
        self.onnx = onnx
        self.method = method
        self.function = function
        self.inplace = inplace
        self.errstate = errstate      # silence NumPy's floating-point warnings in the kernel
        self.int_div_check = int_div_check
        self.doc = doc
        self.node_name = node_name or _camel(name) + "Backward0"
        # grads: {input name: formula(grad, **needed)}; the formula's parameter names say what
        # it reads: input names, "result" (the output) or attribute names. `saves` is derived.
        self.grads = grads or {}
        self.saves = {}
        for inp, formula in self.grads.items():
            params = list(inspect.signature(formula).parameters)[1:]
            self.saves[inp] = tuple(params)
        self.node_class = None
        self.fn = None
        self._apply_plan = None      # built by autograd on first backward (graph.py)

    def __repr__(self):
        return f"OpDef({self.name!r}, {self.kind})"


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


def register(op, fn, *, names=None, method_names=None, inplace_fn=None):
    """Record `op` and publish its callable under its function and method names."""
    OPS[op.name] = op
    op.fn = fn
    if fn.__doc__ is None and op.doc:
        fn.__doc__ = op.doc
    fn.__name__ = op.name
    fn.__qualname__ = op.name
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


def install_methods(tensor_cls):
    """Put every op on Tensor (and FUNCTIONS in shape for ember's namespace), each behind the
    mode seam of ember/dispatch.py, so a mode (tracer, profiler) sees every op call."""
    import sys
    from ..dispatch import with_mode_seam
    wrapped = {}
    for table in (FUNCTIONS, METHODS):
        for name, fn in list(table.items()):
            table[name] = w = with_mode_seam(OPS.get(name, name), fn)
            if w is not fn:
                wrapped.setdefault(id(fn), w)
    for name, fn in METHODS.items():
        setattr(tensor_cls, name, fn)
    # Code that imported an op's function by name (``from .linalg import matmul``; derivative
    # formulas read such names at call time) gets the seamed function too, so a mode sees
    # those calls as well. Modules imported later import the seamed names.
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not mod_name.startswith("ember."):
            continue
        for k, v in list(vars(mod).items()):
            w = wrapped.get(id(v))
            if w is not None and callable(v):
                setattr(mod, k, w)
