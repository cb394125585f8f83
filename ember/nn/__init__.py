"""ember.nn: neural-network building blocks with PyTorch's API.

    from ember import nn
    import ember.nn.functional as F

    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    y = F.softmax(net(x), dim=-1)

Module (modules/module.py) is the base class; Parameter/Buffer (parameter.py) register on
assignment; nn.init fills tensors; nn.utils clips gradients.
"""
from . import functional  # noqa: F401
from . import init  # noqa: F401
from .parameter import Parameter, Buffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import utils  # noqa: F401
