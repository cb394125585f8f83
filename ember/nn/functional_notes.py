"""The annotation helpers and shared docstring fragments that ``torch.nn.functional``
exports: ``BroadcastingList1/2/3`` (``BroadcastingList2[int]`` means "an int or a list of
2 ints"; subscripting gives None outside TorchScript, as in PyTorch), ``DType`` (a dtype's
integer code type) and the note dictionaries (``reproducibility_notes``, ``tf32_notes``,
``sparse_support_notes``) that docstrings are formatted with, keyed as in PyTorch.
"""

__all__ = ["BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "DType",
           "reproducibility_notes", "sparse_support_notes", "tf32_notes"]


class BroadcastingListCls:
    """``BroadcastingListN[T]``: a T, or a list of N T's (an annotation only)."""

    def __getitem__(self, types):
        return None


BroadcastingList1 = BroadcastingListCls()
BroadcastingList2 = BroadcastingList3 = BroadcastingList1

DType = int

reproducibility_notes = {
    "forward_reproducibility_note":
        "This operation may give nondeterministic results when run on a CUDA device "
        "(atomic additions). See :doc:`/notes/randomness` for more information.",
    "backward_reproducibility_note":
        "The backward pass of this operation may give nondeterministic results when run on "
        "a CUDA device (atomic additions). See :doc:`/notes/randomness` for more "
        "information.",
    "cudnn_reproducibility_note":
        "When cuDNN runs it on a CUDA device, this operation may select a nondeterministic "
        "algorithm; set ``torch.backends.cudnn.deterministic = True`` to prevent that. See "
        ":doc:`/notes/randomness` for more information.",
}

sparse_support_notes = {
    "sparse_beta_warning":
        "\n.. warning::\n    Sparse support is a beta feature: some layout, dtype and device "
        "combinations may be missing or change in later releases.\n",
}

tf32_notes = {
    "tf32_note": "This operator supports :ref:`TensorFloat32<tf32_on_ampere>`.",
}
