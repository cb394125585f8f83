"""ember.optim: optimizers and learning-rate schedulers with PyTorch's API.

    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        sched.step()
"""
from .optimizer import (Optimizer, register_optimizer_step_pre_hook,  # noqa: F401
                        register_optimizer_step_post_hook)
from .sgd import SGD  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .adamax import Adamax  # noqa: F401
from .nadam import NAdam  # noqa: F401
from .radam import RAdam  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .asgd import ASGD  # noqa: F401
from .rprop import Rprop  # noqa: F401
from .adafactor import Adafactor  # noqa: F401
from .muon import Muon  # noqa: F401
from . import lr_scheduler  # noqa: F401
