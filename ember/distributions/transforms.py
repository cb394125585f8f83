"""``ember.distributions.transforms``: every transform (transforms_base.py holds the base
class, composition and the shape transforms; transforms_elementwise.py the elementwise maps;
transforms_structured.py the simplex, Cholesky, cat/stack and CDF transforms).

    >>> AffineTransform(1.0, 2.0)(ember.tensor(3.0))
    tensor(7.)
"""
from .transforms_base import (ComposeTransform, IndependentTransform,  # noqa: F401
                              ReshapeTransform, Transform, _InverseTransform, identity_transform)
from .transforms_elementwise import (AbsTransform, AffineTransform,  # noqa: F401
                                     ExpTransform, PowerTransform, SigmoidTransform,
                                     SoftplusTransform, TanhTransform)
from .transforms_structured import (CatTransform, CorrCholeskyTransform,  # noqa: F401
                                    CumulativeDistributionTransform, LowerCholeskyTransform,
                                    PositiveDefiniteTransform, SoftmaxTransform,
                                    StackTransform, StickBreakingTransform)

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
    "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
    "Transform", "identity_transform",
]
