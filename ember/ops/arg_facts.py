"""Facts about torch's functions that decide which exception torch raises for bad input,
written into ember.dispatch_args's tables (which `argument_error` reads after an op raised):

- TORCH_PYTHON: ops whose torch function is Python code (torch/functional.py,
  nn/functional.py) that reads an attribute of some arguments before torch's parser sees
  them, so a str or list there is torch's AttributeError ('list' object has no attribute
  'size'), not the parser's TypeError: {op: (the attribute, or one per position, the
  positions of the arguments it is read from[, when: the calls where it is])}; a non-tensor
  elsewhere reaches torch's parser (its TypeError). stft reads input.dim() only to pad it
  (center=True); tensordot reads a.dim() for an int `dims`. Found by calling torch with a
  str and a list in each tensor argument of the op's samples.
- UINT64_SCALARS: ops' Scalar parameters, where torch's parser takes an int up to 2**64 - 1
  (uint64): the op's own error stands for 2**63 there (found by calling torch with 2**63).
  OWN_RANGE_CHECK: int parameters whose int64 overflow the op reports itself (norm's dim).
  OWN_TYPE_CHECK: ops whose own error for a non-tensor argument is torch's (from_dlpack).
- BOOL_OVERLOAD: ops with an overload taking a bool where another takes an int
  (``std(x, True)`` is ``unbiased=True``, ``nuclear_norm(x, True)`` ``keepdim=True``): a
  bool there is no wrong type.
"""
from .. import dispatch_args as _da

_SIZE2 = ("size", (0, 1))

_da.TORCH_PYTHON.update({
    "stft": ("dim", (0,), lambda a, k: k.get("center", a[5] if len(a) > 5 else True)
             is not False),
    "tensordot": ("dim", (0, 1), lambda a, k: isinstance(k.get("dims", a[2] if len(a) > 2
                                                                else 2), int)),
    "split": ("split", (0,)),
    "unravel_index": ("is_complex", (0,)),
    "max_unpool1d": (("size", "unsqueeze"), (0, 1)), "max_unpool2d": ("size", (0,)),
    "max_unpool3d": ("size", (0,)),
    "adaptive_avg_pool3d": ("size", (0,)), "adaptive_max_pool3d": ("size", (0,)),
    "binary_cross_entropy": ("size", (0, 1, 2)),
    "binary_cross_entropy_with_logits": _SIZE2, "huber_loss": _SIZE2, "l1_loss": _SIZE2,
    "mse_loss": _SIZE2, "smooth_l1_loss": _SIZE2,
    "margin_ranking_loss": ("dim", (0, 1, 2)),
    "norm": ("layout", (0,)),
    "max_pool3d": ("is_cuda", (0,), lambda a, k: k.get("return_indices",
                                                         a[5] if len(a) > 5 else False)),
})
_da.UINT64_SCALARS.update({"linalg_cond": {"p"}, "full": {"fill_value"},
                          "new_full": {"fill_value"}, "full_like": {"fill_value"},
                          "fill_": {"value"}, "arange": {"start", "end", "step"},
                          "tensordot": {"dims"}, "stft": {"n_fft"}, "norm": {"p"},
                          "scalar_tensor": {"s"}})
_da.OWN_RANGE_CHECK.update({"norm": {"dim"}, **{f"max_unpool{n}d": {
    "kernel_size", "stride", "padding", "output_size"} for n in (1, 2)}})
_da.OWN_TYPE_CHECK.update({"from_dlpack"})
_da.BOOL_OVERLOAD.update({"std", "var", "std_mean", "var_mean", "nuclear_norm"})  # (keepdim)
