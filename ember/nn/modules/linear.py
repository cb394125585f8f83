"""Identity, Linear, Bilinear and LazyLinear.

    fc = nn.Linear(20, 30)           # y = x @ W.T + b, W: (30, 20)
    y = fc(ember.randn(128, 20))     # (128, 30)
"""
import math

from ...ops.creation import empty
from .. import functional as F, init
from ..parameter import Parameter, UninitializedParameter
from .module import Module


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with weight (out_features, in_features).

    Initialised as PyTorch does: weight ~ kaiming_uniform_(a=sqrt(5)), i.e.
    U(-1/sqrt(in), 1/sqrt(in)), and bias ~ U(-1/sqrt(in), 1/sqrt(in)).

    >>> nn.Linear(3, 2)(ember.ones(4, 3)).shape
    ember.Size([4, 2])
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear (the name PyTorch gives MultiheadAttention's output projection; it lives in
    torch.nn.modules.linear, so a checkpoint's allowlist can name it there)."""


class Bilinear(Module):
    """``y[k] = x1 @ weight[k] @ x2 + bias[k]`` with weight (out, in1, in2).

    >>> nn.Bilinear(3, 4, 2)(ember.ones(5, 3), ember.ones(5, 4)).shape
    ember.Size([5, 2])
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(Linear):
    """A Linear whose `in_features` is read from the first input; it then becomes a Linear.

    >>> fc = nn.LazyLinear(2); fc(ember.ones(4, 7)); fc
    Linear(in_features=7, out_features=2, bias=True)
    """
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Module.__init__(self)
        self.in_features = 0
        self.out_features = out_features
        self.weight = UninitializedParameter(dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self._lazy_hook = self.register_forward_pre_hook(LazyLinear._infer_parameters)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def has_uninitialized_params(self):
        return any(isinstance(p, UninitializedParameter) for p in self._parameters.values())

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()

    @staticmethod
    def _infer_parameters(module, args):
        module.initialize_parameters(*args)
        if not module.has_uninitialized_params():
            module._lazy_hook.remove()
            del module._lazy_hook
            module.__class__ = module.cls_to_become
