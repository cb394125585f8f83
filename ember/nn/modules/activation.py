"""Activation layers: thin Modules over ember.nn.functional.

    act = nn.GELU(approximate="tanh")
    y = act(x)        # same as F.gelu(x, approximate="tanh")
"""
from ...ops.creation import empty
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module


def _inplace_str(inplace, first=False):
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Inplace(Module):
    """An activation whose only option is `inplace`."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class ReLU(_Inplace):
    """``max(x, 0)``.  ``nn.ReLU()(ember.tensor([-1., 2.]))`` -> ``tensor([0., 2.])``"""
    _fn = F.relu


class SELU(_Inplace):
    """Scaled ELU (self-normalising)."""
    _fn = F.selu


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""
    _fn = F.silu


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""
    _fn = F.mish


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""
    _fn = F.hardswish

    def extra_repr(self):
        return ""


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""
    _fn = F.hardsigmoid

    def extra_repr(self):
        return ""


class Hardtanh(Module):
    """Clamp to ``[min_val, max_val]``."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        assert self.max_val > self.min_val

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class PReLU(Module):
    """Leaky ReLU with a learned slope (one, or one per channel), initialised to `init`.

    >>> nn.PReLU(num_parameters=3)(ember.randn(2, 3, 5)).shape
    ember.Size([2, 3, 5])
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _Alpha(Module):
    _fn = None

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class ELU(_Alpha):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    _fn = F.elu


class CELU(_Alpha):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _fn = F.celu


class GELU(Module):
    """``x * Phi(x)``; ``approximate='tanh'`` uses the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above `threshold`."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    """``x`` where ``x > threshold``, else `value`."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class _Plain(Module):
    """An activation without options."""
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Tanh(_Plain):
    """``tanh(x)``."""
    _fn = F.tanh


class Sigmoid(_Plain):
    """``1 / (1 + exp(-x))``."""
    _fn = F.sigmoid


class LogSigmoid(_Plain):
    """``log(sigmoid(x))``."""
    _fn = F.logsigmoid


class Softsign(_Plain):
    """``x / (1 + |x|)``."""
    _fn = F.softsign


class Tanhshrink(_Plain):
    """``x - tanh(x)``."""
    _fn = F.tanhshrink


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(_Shrink):
    """Shrink towards zero by `lambd`."""
    _fn = F.softshrink


class Hardshrink(_Shrink):
    """Zero inside ``[-lambd, lambd]``."""
    _fn = F.hardshrink


class GLU(Module):
    """Gated linear unit over `dim`: ``a * sigmoid(b)`` for the two halves ``a, b``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax over `dim`.  ``nn.Softmax(dim=-1)(logits)``"""
    _fn = F.softmax


class LogSoftmax(_SoftmaxBase):
    """Log-softmax over `dim`."""
    _fn = F.log_softmax


class Softmin(_SoftmaxBase):
    """Softmin over `dim`."""
    _fn = F.softmin


# (torch.nn.modules.activation's name for it: code names the class there, as the
# weights_only allowlists of checkpoints do)
from .activation_attention import MultiheadAttention  # noqa: E402,F401
