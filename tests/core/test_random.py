"""Random ops, differential against torch where it is meaningful: seeding, generators and
RNG state behave like torch's; shapes, dtypes, value ranges and error types match torch's;
samples pass loose statistical checks. (Bit-equality with torch's stream is not a goal.)"""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

# each draws from the default generator (or `g`); called as fn(module, g)
DRAWS = {
    "rand": lambda m, g: m.rand(3, 4, generator=g),
    "randn": lambda m, g: m.randn(5, generator=g),
    "randint": lambda m, g: m.randint(2, 9, (6,), generator=g),
    "randperm": lambda m, g: m.randperm(10, generator=g),
    "normal": lambda m, g: m.normal(1.0, 2.0, (4,), generator=g),
    "normal_t": lambda m, g: m.normal(m.zeros(3), m.ones(3), generator=g),
    "bernoulli": lambda m, g: m.bernoulli(m.full((8,), 0.5), generator=g),
    "multinomial": lambda m, g: m.multinomial(m.ones(6), 3, generator=g),
    "uniform_": lambda m, g: m.empty(5).uniform_(-1, 1, generator=g),
    "normal_": lambda m, g: m.empty(5).normal_(generator=g),
    "bernoulli_": lambda m, g: m.empty(5).bernoulli_(0.3, generator=g),
    "random_": lambda m, g: m.empty(5).random_(0, 100, generator=g),
    "exponential_": lambda m, g: m.empty(5).exponential_(generator=g),
}


@pytest.mark.parametrize("name", DRAWS)
def test_manual_seed_reproduces(name):
    for m in (torch, ember):
        m.manual_seed(1234)
        a, b = DRAWS[name](m, None), DRAWS[name](m, None)
        m.manual_seed(1234)
        a2, b2 = DRAWS[name](m, None), DRAWS[name](m, None)
        assert a.tolist() == a2.tolist() and b.tolist() == b2.tolist()
        m.manual_seed(99)
        assert any(DRAWS[name](m, None).tolist() != a.tolist() for _ in range(5))


@pytest.mark.parametrize("name", DRAWS)
def test_generators_are_independent(name):
    for m in (torch, ember):
        g1, g2 = m.Generator().manual_seed(7), m.Generator().manual_seed(7)
        m.manual_seed(0)
        plain = DRAWS[name](m, None).tolist()
        m.manual_seed(0)
        from_g1 = DRAWS[name](m, g1).tolist()  # must not advance the default stream
        assert DRAWS[name](m, None).tolist() == plain
        assert DRAWS[name](m, g2).tolist() == from_g1


def test_rng_state_round_trip_and_seeds():
    for m in (torch, ember):
        m.manual_seed(5)
        assert m.initial_seed() == 5
        state = m.get_rng_state()
        assert isinstance(state, m.Tensor) and state.dtype == m.uint8
        a = m.rand(4).tolist()
        m.rand(10)
        m.set_rng_state(state)
        assert m.rand(4).tolist() == a
        g = m.Generator().manual_seed(11)
        gs = g.get_state()
        x = m.randn(3, generator=g).tolist()
        g.set_state(gs)
        assert m.randn(3, generator=g).tolist() == x
        assert g.initial_seed() == 11
        with pytest.raises(TypeError):
            m.set_rng_state(m.zeros(3))
        assert m.manual_seed(3) is m.default_generator


SIZE = st.lists(st.integers(0, 3), max_size=3).map(tuple)
FLOAT = st.sampled_from([None, "float32", "float64", "float16", "bfloat16"])


def same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert repr(e.dtype).replace("ember.", "") == repr(t.dtype).replace("torch.", "")


def kw(m, dtype):
    return {} if dtype is None else {"dtype": getattr(m, dtype)}


@settings(max_examples=40, deadline=None)
@given(SIZE, FLOAT, st.sampled_from([None, "int64", "int32", "uint8", "float32"]))
def test_shapes_and_dtypes(size, fdt, idt):
    for fn in (lambda m: m.rand(*(size or [()]), **kw(m, fdt)),
               lambda m: m.randn(size, **kw(m, fdt)),
               lambda m: m.randint(0, 3, size, **kw(m, idt)),
               lambda m: m.randint(4, size, **kw(m, idt)),
               lambda m: m.normal(0.0, 1.0, size, **kw(m, fdt)),
               lambda m: m.rand_like(m.zeros(size, **kw(m, fdt))),
               lambda m: m.randn_like(m.zeros(size, **kw(m, fdt))),
               lambda m: m.randint_like(m.zeros(size, **kw(m, idt)), 3),
               lambda m: m.bernoulli(m.full(size, 0.5, **kw(m, fdt))),
               lambda m: m.normal(m.zeros(size, **kw(m, fdt)), 1.0),
               lambda m: m.normal(1.0, m.ones(size, **kw(m, fdt))),
               lambda m: m.randperm(len(size), **kw(m, idt))):
        same(fn(ember), fn(torch))
    assert ember.rand(2, requires_grad=True).requires_grad


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 30), st.integers(-5, 5), st.integers(1, 20))
def test_value_ranges(n, low, span):
    ember.manual_seed(n)
    p = ember.randperm(n)
    assert sorted(p.tolist()) == list(range(n))
    r = ember.randint(low, low + span, (200,))
    assert r.min().item() >= low and r.max().item() < low + span
    u = ember.rand(200)
    assert u.min().item() >= 0 and u.max().item() < 1
    v = ember.empty(200).uniform_(low, low + span)
    assert v.min().item() >= low and v.max().item() < low + span
    b = ember.bernoulli(ember.rand(50))
    assert set(b.tolist()) <= {0.0, 1.0}
    w = ember.rand(4, max(n, 1)) + 0.01
    k = min(n, 3) or 1
    s = ember.multinomial(w, k)
    assert tuple(s.shape) == (4, k)
    for row in s.tolist():
        assert len(set(row)) == k and all(0 <= i < w.shape[1] for i in row)
    z = ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 5, replacement=True)
    assert z.tolist() == [1] * 5
    for dt in ("uint8", "int8", "int32", "float32", "float16", "bool"):
        x = ember.empty(300, dtype=getattr(ember, dt)).random_()
        info = ember.iinfo(x.dtype) if dt not in ("float32", "float16", "bool") else None
        lo, hi = (0, info.max) if info else (0, 1 if dt == "bool" else 2 ** 24)
        assert lo <= x.float().min().item() and x.float().max().item() <= hi
        y = ember.empty(300, dtype=getattr(ember, dt)).random_(0, 2)
        assert set(y.tolist()) <= {0, 1, False, True}


def test_statistics():
    ember.manual_seed(0)
    n = 10000
    u = ember.rand(n)
    assert abs(u.mean().item() - 0.5) < 0.05
    z = ember.randn(n)
    assert abs(z.mean().item()) < 0.05 and abs(z.std().item() - 1) < 0.05
    x = ember.normal(3.0, 2.0, (n,))
    assert abs(x.mean().item() - 3) < 0.1 and abs(x.std().item() - 2) < 0.1
    e = ember.empty(n).exponential_(4.0)
    assert abs(e.mean().item() - 0.25) < 0.02 and e.min().item() >= 0
    b = ember.empty(n).bernoulli_(0.3)
    assert abs(b.mean().item() - 0.3) < 0.03
    r = ember.randint(0, 10, (n,))
    assert abs(r.float().mean().item() - 4.5) < 0.2
    m = ember.multinomial(ember.tensor([1.0, 3.0]), n, replacement=True)
    assert abs(m.float().mean().item() - 0.75) < 0.03
    first = ember.stack([ember.multinomial(ember.tensor([1.0, 0.0, 9.0]), 2) for _ in range(300)])
    assert (first[:, 0] == 2).float().mean().item() > 0.8  # heavy category tends to come first
    assert (first[:, 1] != first[:, 0]).all().item()


ERRORS = [
    lambda m: m.randint(5, 5, (2,)), lambda m: m.randint(6, 5, (2,)),
    lambda m: m.randint(5), lambda m: m.randperm(-1), lambda m: m.rand(),
    lambda m: m.multinomial(m.tensor([0.2, 0.8]), 3),
    lambda m: m.multinomial(m.tensor([-0.2, 0.8]), 1),
    lambda m: m.multinomial(m.ones(2, 2, 2), 1), lambda m: m.multinomial(m.zeros(3), 1),
    lambda m: m.multinomial(m.tensor([1, 2]), 1), lambda m: m.normal(0.0, -1.0, (2,)),
    lambda m: m.normal(m.zeros(2), -m.ones(2)), lambda m: m.bernoulli(m.tensor([1.5])),
    lambda m: m.bernoulli(m.tensor([1, 0])), lambda m: m.rand(2, dtype=m.int64),
    lambda m: m.randn(2, dtype=m.int64), lambda m: m.zeros(2, dtype=m.int64).uniform_(),
    lambda m: m.zeros(2, dtype=m.int64).normal_(), lambda m: m.zeros(2).exponential_(-1.0),
    lambda m: m.zeros(2).uniform_(1.0, 0.0), lambda m: m.zeros(2).random_(5, 2),
    lambda m: m.zeros(2).random_(0), lambda m: m.zeros(2).bernoulli_(1.5),
    lambda m: m.rand_like(m.zeros(2, dtype=m.int64)), lambda m: m.set_rng_state(m.zeros(3)),
]


@pytest.mark.parametrize("fn", ERRORS, ids=range(len(ERRORS)))
def test_errors_match_torch(fn):
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value)):
        fn(ember)
