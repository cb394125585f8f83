"""The layer classes of ember.nn (one file per family, as in PyTorch)."""
from .module import Module  # noqa: F401
from .container import (Sequential, ModuleList, ModuleDict, ParameterList,  # noqa: F401
                        ParameterDict)
from .linear import Identity, Linear, Bilinear, LazyLinear  # noqa: F401
from .activation import (ReLU, ReLU6, LeakyReLU, PReLU, ELU, SELU, CELU, GELU,  # noqa: F401
                         SiLU, Mish, Softplus, Softsign, Hardtanh, Hardswish, Hardsigmoid,
                         Tanh, Sigmoid, LogSigmoid, Softmax, LogSoftmax, Softmin, Threshold,
                         GLU, Tanhshrink, Softshrink, Hardshrink)
from .dropout import (Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout,  # noqa: F401
                      FeatureAlphaDropout)
from .sparse import Embedding  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
