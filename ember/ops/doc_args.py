"""The docstring fragments torch.fft and torch.special expose (`common_args`,
`factory_common_args`, `multi_dim_common`: dicts of argument name -> its description, with
torch's keys), worded for ember. ember.fft's transforms describe `input` and `out` with
them (their docstrings' "Args" sections)."""

common_args = {
    "input": "input (Tensor): the tensor to transform.",
    "generator": "generator (:class:`ember.Generator`, optional): the random number "
                 "generator to draw from",
    "out": "out (Tensor, optional): where to write the result.",
    "memory_format": "memory_format (:class:`ember.memory_format`, optional): the memory "
                     "format of the result. Default: ``ember.preserve_format``.",
}

factory_common_args = dict(common_args, **{
    "memory_format": "memory_format (:class:`ember.memory_format`, optional): the memory "
                     "format of the result. Default: ``ember.contiguous_format``.",
    "dtype": "dtype (:class:`ember.dtype`, optional): the result's dtype. Default: the "
             "global default (:func:`ember.get_default_dtype`) when ``None``.",
    "layout": "layout (:class:`ember.layout`, optional): the result's layout. Default: "
              "``ember.strided``.",
    "device": "device (:class:`ember.device`, optional): the result's device. Default: the "
              "default device (:func:`ember.set_default_device`) when ``None``.",
    "requires_grad": "requires_grad (bool, optional): whether autograd records operations "
                     "on the result. Default: ``False``.",
    "pin_memory": "pin_memory (bool, optional): allocate the result in pinned memory (CPU "
                  "tensors only; ember has no accelerator to pin for). Default: ``False``.",
    "check_invariants": "check_invariants (bool, optional): whether a sparse tensor's "
                        "invariants are checked. Default: as "
                        ":func:`ember.sparse.check_sparse_tensor_invariants.is_enabled` says.",
    "sparse_factory_device_note": ".. note::\n\n   Without ``device``, the values and "
                                  "indices tensors must be on one device, which the result "
                                  "takes; with it, they are moved there.",
})

multi_dim_common = dict(common_args, **{
    "dtype": "dtype (:class:`ember.dtype`, optional): the result's dtype; the input is cast "
             "to it before the operation, which keeps integer sums from overflowing. "
             "Default: None.",
    "keepdim": "keepdim (bool): whether the reduced dims stay in the result, with size 1.",
    "opt_keepdim": "\n    keepdim (bool, optional): whether the reduced dims stay in the "
                   "result, with size 1. Default: ``False``.\n",
    "dim": "dim (int or tuple of ints): the dim or dims to reduce.",
    "keepdim_details": "\nIf :attr:`keepdim` is ``True``, the result has the input's shape "
                       "with size 1 in the reduced dim(s) :attr:`dim`; otherwise those dims "
                       "are removed (see :func:`ember.squeeze`), leaving 1 (or ``len(dim)``) "
                       "fewer dims.\n",
    "opt_dim": "\n    dim (int or tuple of ints, optional): the dim or dims to reduce.\n",
    "opt_dim_all_reduce": "\n    dim (int or tuple of ints, optional): the dim or dims to "
                          "reduce; ``None`` reduces them all.\n",
})
