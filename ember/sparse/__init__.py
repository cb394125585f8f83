"""ember.sparse: COO and CSR sparse tensors (torch.sparse's common part, 2-D CSR, no hybrid
dims) and torch.sparse's functions on them.

coo.py holds the COO tensor and the sparse x dense products, csr.py the CSR tensor,
functions.py sum / addmm / sampled_addmm / softmax / log_softmax / spdiags / check_sparse_tensor_invariants.
ember/__init__.py wires Tensor.to_sparse / to_sparse_csr and ember.spmm; ember.matmul (and
so ember.mm and `dense @ sparse`) reaches the products through the sparse classes'
`_sparse_matmul` hook, looked up only when an operand is not a Tensor.
"""
from ..core.tensor import sparse_coo, sparse_csr, strided  # noqa: F401
from .coo import SparseCooTensor, sparse_coo_tensor, to_sparse, mm, matmul  # noqa: F401
from .csr import SparseCsrTensor, sparse_csr_tensor, to_sparse_csr  # noqa: F401
from .functions import (sum, addmm, sampled_addmm, spmm, softmax, log_softmax, spdiags,  # noqa: F401
                        check_sparse_tensor_invariants)
