"""Backward node templates: what recording one call of an op saves, and how its node turns
the incoming gradient into gradients for the inputs (one entry of derivatives.yaml).

A `Derivative` is not an op. Every op is one `OpDef` (ember/ops/registry.py), and an OpDef
is its own default template (its ``grads``). An op whose function records a different node
for some of its calls names that template here instead, with ``of`` = the op's name:
``sum(x)`` records SumBackward0 and ``sum(x, dim)`` SumBackward1, two templates of the one
``sum`` op (torch's two derivatives.yaml entries for its overloads). The registry lists them
as ``OpDef.derivatives``, which is what the generated gradient tests read.

Example (ember/ops/reduction.py): the template of ``sum(x, dim)``, which saves the input's
shape and the dims and expands the gradient back::

    _SUM_DIM = Derivative("sum_dim", of="sum", of="sum", node_name="SumBackward1",
                          attrs={"shape": None, "dims": None, "keepdim": False},
                          grads={"self": lambda g, shape, dims, keepdim: ...})
"""
import inspect

BY_OP = {}          # op name -> the templates recorded by that op's function, besides itself


class Derivative:
    """One backward node template. Fields (autograd/graph.py reads them when it records):

    - ``name``: the template's name (error messages), ``node_name``: the generated node
      class's name (``MulBackward0``); ``of``: the registered op it belongs to;
    - ``inputs``: names of the differentiable inputs in call order; ``attrs``: the
      non-tensor values a formula may read, with defaults;
    - ``grads``: {input name, or a tuple of names for a joint formula: formula(grad, ...)}.
      A formula's parameter names say what it reads (input names, "result", attribute
      names, "grad_input_mask"); ``saves`` is derived from them: what a node keeps;
    - ``holomorphic``: the formulas are the real-case ones (see OpDef); False: they already
      follow torch's complex convention; ``scalars_as_tensors``: a Python-scalar operand is
      saved as if it were a tensor (mul, div), so a second backward fails as in torch.
    """

    def __init__(self, name, *, grads=None, inputs=("self",), attrs=None, node_name=None,
                 holomorphic=True, scalars_as_tensors=False, of=None):
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = dict(attrs or {})
        self.holomorphic = holomorphic
        self.scalars_as_tensors = scalars_as_tensors
        self.node_name = node_name or _camel(name) + "Backward0"
        self.grads = grads or {}
        self.saves = {inp: tuple(list(inspect.signature(f).parameters)[1:])
                      for inp, f in self.grads.items()}
        self.node_class = None       # generated on first recording (graph.node_class)
        self._apply_plan = None      # built by autograd on first backward (graph.py)
        if type(self) is Derivative:
            self.of = of or name
            BY_OP.setdefault(self.of, []).append(self)

    def __repr__(self):
        return f"Derivative({self.name!r}, of={self.of!r})"


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


def derivatives_of(name):
    """The templates, other than the op's own, that op `name` records."""
    return tuple(BY_OP.get(name, ()))
