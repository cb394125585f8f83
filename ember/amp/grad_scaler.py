"""``ember.amp.GradScaler``: loss scaling for float16 training.

    scaler = ember.amp.GradScaler()
    with ember.autocast("cpu", dtype=ember.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()     # gradients are scale * true gradients
    scaler.unscale_(opt)              # optional: true gradients, e.g. for clipping
    scaler.step(opt)                  # skipped when a gradient is inf/nan
    scaler.update()                   # back off after an overflow, grow after clean steps

Multiplying the loss by a large factor keeps small float16 gradients from flushing to zero;
the factor is divided out before the optimizer sees the gradients. The scale is a float32
0-dim tensor (made on first use), the growth tracker an int32 one, as in PyTorch; each
optimizer moves READY -> UNSCALED -> STEPPED between two update() calls.
"""
from collections import defaultdict
from enum import Enum

from ..core import dtype as D
from ..core.tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops.creation import full


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(self, device="cpu", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier " \
              "in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self):
        self._scale = full((), self._init_scale, dtype=D.float32)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=D.int32)

    def scale(self, outputs):
        """`outputs` (a tensor, or lists/tuples of them) multiplied by the scale factor."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()

        def apply(v):
            if isinstance(v, Tensor):
                return v * self._scale.to(v.dtype) if v.dtype is D.float64 \
                    else v * self._scale
            if isinstance(v, (list, tuple)):
                return type(v)(apply(x) for x in v)
            if hasattr(v, "__iter__") and not isinstance(v, (str, bytes)):
                return map(apply, v)   # other iterables come back lazily, as in PyTorch
            return _bad()
        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Multiply every gradient by `inv_scale` in place; returns whether any was inf/nan."""
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is D.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if not found and not bool(g.isfinite().all()):
                        found = True
                    g.mul_(inv_scale.to(g.dtype) if g.dtype is D.float64 else inv_scale)
        return full((), 1.0 if found else 0.0, dtype=D.float32)

    def unscale_(self, optimizer):
        """Divide `optimizer`'s gradients by the scale (once between two update() calls)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        st = self._per_optimizer_states[id(optimizer)]
        if st["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in double, then float32, so it is exact for powers of two and close
        # otherwise
        inv_scale = full((), 1.0 / float(self._scale.double().item()), dtype=D.float32)
        st["found_inf_per_device"] = {"cpu": self._unscale_grads_(optimizer, inv_scale, False)}
        st["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless unscale_ was called) and run ``optimizer.step(*args, **kwargs)``
        unless a gradient is inf/nan; returns its return value, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        st = self._per_optimizer_states[id(optimizer)]
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(st["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in st["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        st["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Set the scale for the next iteration: `new_scale` if given; otherwise back off
        after an inf/nan, or grow after `growth_interval` clean steps in a row."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = "new_scale should be a float or a 1-element ember.FloatTensor or " \
                         "ember.cuda.FloatTensor with requires_grad=False."
                if not (isinstance(new_scale, Tensor) and new_scale.numel() == 1
                        and new_scale.dtype is D.float32 and not new_scale.requires_grad):
                    raise AssertionError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found = [v for st in self._per_optimizer_states.values()
                     for v in st["found_inf_per_device"].values()]
            if len(found) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            if sum(v.item() for v in found):
                scale.mul_(self._backoff_factor)
                tracker.fill_(0)
            else:
                successful = int(tracker.item()) + 1
                if successful == self._growth_interval:
                    grown = scale * self._growth_factor
                    if bool(grown.isfinite()):   # never grow into inf
                        scale.copy_(grown)
                    tracker.fill_(0)
                else:
                    tracker.fill_(successful)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ---- accessors ----
    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None \
            else int(self._growth_tracker.item())

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        s = self.__dict__.copy()
        if self._enabled:   # per-optimizer states are keyed by id(): meaningless elsewhere
            s["_per_optimizer_states"] = None
        return s

    def __setstate__(self, s):
        self.__dict__.update(s)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)


def _bad():
    raise ValueError("outputs must be a Tensor or an iterable of Tensors")
