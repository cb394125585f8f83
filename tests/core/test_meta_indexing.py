"""Meta tensors through advanced indexing and the ops whose result size comes from values
(issue 17): `x[index]` with index tensors, lists and masks gives the shapes torch's meta
device gives and the strides of ember's cpu result (NumPy's advanced-indexing layout);
data-dependent results refuse with torch's exception types (a meta bool mask, meta
repeat_interleave counts without output_size), and the rules read no values.
"""
import numpy as np
import pytest
import torch

import ember

_DT = {"float32": (torch.float32, ember.float32), "int64": (torch.int64, ember.int64),
       "bool": (torch.bool, ember.bool)}


def _kept(t):
    return [s for s, n in zip(t.stride(), t.shape) if n > 1]


def _index(lib, spec, device):
    """The index `spec` (a tuple of "i<shape>" int tensors, "b<shape>" cpu bool masks,
    slices, None, Ellipsis, lists) for `lib` (torch or ember), int tensors on `device`."""
    out = []
    for k, v in enumerate(spec):
        if isinstance(v, tuple) and v[0] == "i":        # ("i", shape, high)
            vals = np.random.default_rng(k).integers(0, v[2], v[1])
            t = lib.tensor(vals) if device == "cpu" else \
                lib.empty(v[1], dtype=lib.int64, device="meta")
            out.append(t)
        elif isinstance(v, tuple) and v[0] == "b":      # ("b", mask values): a cpu mask
            out.append(lib.tensor(np.array(v[1], bool)))
        else:
            out.append(v)
    return tuple(out)


CASES = [
    ((3, 4), None, (("i", (2,), 3),)),
    ((3, 4), None, (slice(None), ("i", (2, 3), 4))),
    ((3, 4, 5), None, (("i", (2,), 3), slice(None), ("i", (2,), 5))),   # separated: front
    ((3, 4, 5), None, (slice(None), ("i", (2, 1), 4), ("i", (3,), 5))),  # adjacent: in place
    ((3, 4, 5), (2, 0, 1), (Ellipsis, ("i", (2,), 3))),
    ((3, 4, 5), None, (1, slice(None), ("i", (2,), 5))),                # an int first
    ((3, 4, 5), None, (None, ("i", (2,), 3), None, slice(1, 3))),
    ((3, 4), (1, 0), (("i", (2, 2), 4), [0, 2])),
    ((3, 4), None, (("b", [True, False, True]),)),                      # a cpu mask counts
    ((3, 4), None, (slice(None), ("b", [True, True, False, True]))),
    ((3, 4), None, ([0, 2, 1],)),
]


@pytest.mark.parametrize("shape, perm, spec", CASES)
def test_advanced_getitem_on_meta_matches_torch_shape_and_cpu_strides(shape, perm, spec):
    def make(lib, device):
        x = lib.empty(*shape, device=device) if device == "meta" else \
            lib.zeros(*shape)
        return x.permute(*perm) if perm is not None else x
    t = make(torch, "meta")[_index(torch, spec, "meta")]
    m = make(ember, "meta")[_index(ember, spec, "meta")]
    c = make(ember, "cpu")[_index(ember, spec, "cpu")]
    assert m.is_meta and m.dtype is ember.float32
    assert tuple(m.shape) == tuple(t.shape) == tuple(c.shape)
    if c.numel() > 1:
        assert _kept(m) == _kept(c), (m.stride(), c.stride())


def test_meta_advanced_getitem_records_the_node_and_reads_no_values():
    x = ember.empty(4, 5, device="meta", requires_grad=True)
    i = ember.empty(3, dtype=ember.int64, device="meta")
    y = x[i]
    assert y.is_meta and tuple(y.shape) == (3, 5) and y.grad_fn is not None


@pytest.mark.parametrize("make_index", [
    lambda lib: lib.empty(3, 4, dtype=lib.bool, device="meta"),
    lambda lib: (lib.empty(3, dtype=lib.bool, device="meta"), slice(None)),
    lambda lib: lib.empty((), dtype=lib.bool, device="meta"),
])
def test_meta_bool_mask_refuses_as_torch_meta_does(make_index):
    with pytest.raises(Exception) as te:
        torch.empty(3, 4, device="meta")[make_index(torch)]
    with pytest.raises(type(te.value)):
        ember.empty(3, 4, device="meta")[make_index(ember)]


def test_meta_getitem_keeps_cpu_index_errors():
    x = ember.empty(3, 4, device="meta")
    with pytest.raises(IndexError):
        x[ember.tensor([0, 5])]                  # out of range (a cpu index is checked)
    with pytest.raises(IndexError):
        x[ember.tensor([[0, 1]]), ember.tensor([[0], [1], [2]]), ember.tensor([0, 1])]
    with pytest.raises(IndexError):
        x[ember.tensor([0.0])]


@pytest.mark.parametrize("call", [
    lambda m, x: m.repeat_interleave(x, m.empty(3, dtype=m.int64, device="meta"), dim=0,
                                     output_size=7),
    lambda m, x: m.repeat_interleave(x, m.tensor([1, 2, 3]), dim=0),
    lambda m, x: m.repeat_interleave(x, 2, dim=1),
    lambda m, x: x.repeat_interleave(m.tensor(2), dim=1),
    lambda m, x: m.repeat_interleave(m.empty(3, dtype=m.int64, device="meta"), output_size=5),
    lambda m, x: m.multinomial(x, 2),
    lambda m, x: m.multinomial(x[0], 6, replacement=True),
])
def test_value_sized_ops_on_meta_match_torch(call):
    t = call(torch, torch.empty(3, 4, device="meta"))
    e = call(ember, ember.empty(3, 4, device="meta"))
    assert e.is_meta and tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


@pytest.mark.parametrize("call", [
    lambda m, x: m.repeat_interleave(x, m.empty(3, dtype=m.int64, device="meta"), dim=0),
    lambda m, x: m.repeat_interleave(m.empty(3, dtype=m.int64, device="meta")),
])
def test_meta_counts_without_output_size_refuse_as_torch(call):
    with pytest.raises(Exception) as te:
        call(torch, torch.empty(3, 4, device="meta"))
    with pytest.raises(type(te.value), match="without output_size"):
        call(ember, ember.empty(3, 4, device="meta"))


def test_meta_inverse_layout_does_not_depend_on_values():
    # a singular matrix's inverse (LAPACK getrs) is laid out as an invertible one's
    sing, reg = ember.zeros(3, 3), ember.eye(3) * 2
    m = ember.linalg.inv_ex(ember.empty(3, 3, device="meta")).inverse
    assert ember.linalg.inv_ex(sing).inverse.stride() == \
        ember.linalg.inv_ex(reg).inverse.stride() == m.stride()
