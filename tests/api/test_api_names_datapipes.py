"""torch.utils.data's DataPipe names (IterDataPipe, MapDataPipe, DFIterDataPipe, DataChunk and
the decorators) checked against real torch: values, types, the one-live-iterator rule, the
determinism switches and the errors."""
import pickle
import typing
import warnings

import pytest
import torch

import ember

LIBS = [torch, ember]
warnings.filterwarnings("ignore", message=".*function is not supported by pickle")


def _err(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the type and message are compared
        return type(e).__name__, str(e)
    return None


def _make_pipes(lib):
    D = lib.utils.data

    class Range(D.IterDataPipe):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            for i in range(self.n):
                yield i

        def __len__(self):
            return self.n

    class Doubles(D.MapDataPipe):
        def __init__(self, n):
            self.n = n

        def __getitem__(self, i):
            if not 0 <= i < self.n:
                raise IndexError(i)
            return 2 * i

        def __len__(self):
            return self.n
    # module-level names, so that pickle (and torch's DataLoader graph walk) finds them
    for cls in (Range, Doubles):
        cls.__qualname__ = cls.__name__ = f"{cls.__name__}_{lib.__name__}"
        globals()[cls.__name__] = cls
    return D, Range, Doubles


_PIPES = {lib: _make_pipes(lib) for lib in LIBS}


def pipes(lib):
    return _PIPES[lib]


def norm(v):
    """Tensors as lists, containers recursively (to compare torch's and ember's results)."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, str):
        return v.replace("_torch", "_LIB").replace("_ember", "_LIB")
    if isinstance(v, (list, tuple)):
        return type(v)(norm(x) for x in v) if type(v) in (list, tuple) else \
            (type(v).__name__, [norm(x) for x in v])
    return v


def both(fn):
    out = [norm(fn(*pipes(lib), lib)) for lib in LIBS]
    assert out[0] == out[1], out
    return out[0]


def test_datachunk():
    def run(D, R, M, lib):
        d = D.DataChunk((1, 2, 3))
        return (list(d), d.items, d.as_str("  "), list(d.raw_iterator()), isinstance(d, list),
                d == [1, 2, 3], len(d))
    both(run)


def test_classes_and_kinds():
    def run(D, R, M, lib):
        return (issubclass(D.IterDataPipe, D.IterableDataset), issubclass(D.MapDataPipe, D.Dataset),
                issubclass(D.DFIterDataPipe, D.IterDataPipe), D.DFIterDataPipe()._is_dfpipe(),
                isinstance(R(1), D.IterableDataset), repr(R(2)), str(M(2)), typing.get_origin(
                    D.IterDataPipe[int]) is D.IterDataPipe, len(R(4)), len(M(3)))
    both(run)


def test_functional_forms_iter():
    def run(D, R, M, lib):
        out = [list(R(5).map(lambda x: x * 10)), list(R(7).filter(lambda x: x % 3 == 0)),
               list(R(7).batch(3)), type(list(R(7).batch(3))[0]).__name__,
               list(R(7).batch(3, drop_last=True)), len(R(7).batch(3)),
               len(R(7).batch(3, drop_last=True)), list(R(5).batch(2).unbatch()),
               list(R(6).batch(2).batch(2).unbatch(unbatch_level=2)),
               list(R(6).batch(2).batch(2).unbatch(unbatch_level=-1)),
               list(R(3).zip(R(2), R(5))), len(R(3).zip(R(2))), list(R(2).concat(R(3))),
               len(R(2).concat(R(3))), list(R(4).batch(2).collate()),
               list(R(4).batch(2).collate(collate_fn=sum)),
               list(R(3).map(lambda x: (x, -x)).map(lambda v: v * 2, input_col=1)),
               list(R(3).map(lambda x: [x, -x]).map(lambda v: v + 1, input_col=0, output_col=-1)),
               list(R(3).map(lambda x: (x, x + 1, 5)).map(lambda a, b: a * b, input_col=[0, 1])),
               list(R(4).map(lambda x: (x, x % 2 == 0)).filter(lambda f: f, input_col=1)),
               list(R(8).filter(lambda x: x > 2).map(lambda x: -x).batch(2))]
        return norm(out)
    both(run)


def test_functional_forms_map():
    def run(D, R, M, lib):
        m = M(5)
        return ([m.map(lambda x: x + 1)[i] for i in range(5)], len(m.map(str)),
                [m.batch(2)[i] for i in range(3)], len(m.batch(2)), len(m.batch(2, drop_last=True)),
                [m.concat(M(2))[i] for i in range(7)], len(m.concat(M(2))),
                [m.zip(M(3))[i] for i in range(3)], len(m.zip(M(3))),
                _err(lambda: m.concat(M(2))[7]), _err(lambda: m.batch(2, drop_last=True)[2]))
    both(run)


@pytest.mark.parametrize("case", ["output_col without input_col", "two output cols",
                                  "batch 0", "unbatch too deep", "unbatch level", "filter bool",
                                  "concat none", "concat type", "zip type", "map concat type",
                                  "no len", "no attribute"])
def test_builtin_errors(case):
    def run(D, R, M, lib):
        gen = R(3).filter(lambda x: True)        # no __len__
        return _err({
            "output_col without input_col": lambda: R(2).map(abs, output_col=1),
            "two output cols": lambda: R(2).map(abs, input_col=0, output_col=[1, 2]),
            "batch 0": lambda: R(2).batch(0),
            "unbatch too deep": lambda: list(R(2).batch(1).unbatch(unbatch_level=2)),
            "unbatch level": lambda: list(R(2).unbatch(unbatch_level=-2)),
            "filter bool": lambda: list(R(2).filter(lambda x: x)),
            "concat none": lambda: D.IterDataPipe.functions["concat"].__call__(),
            "concat type": lambda: R(2).concat([1]),
            "zip type": lambda: R(2).zip([1]),
            "map concat type": lambda: M(2).concat(R(1)),
            "no len": lambda: len(gen.map(abs)),
            "no attribute": lambda: R(1).nothing_here,
        }[case])
    got = [norm(run(*pipes(lib), lib)) for lib in LIBS]
    assert got[0][0] == got[1][0]
    if case not in ("concat none", "filter bool"):
        assert got[0][1].split("\nThis exception")[0] == got[1][1].split("\nThis exception")[0]


def test_functional_datapipe_registration():
    def run(D, R, M, lib):
        name = f"times_{lib.__name__}"

        @D.functional_datapipe(name)
        class Times(D.IterDataPipe):
            def __init__(self, source, k):
                self.source, self.k = source, k

            def __iter__(self):
                for x in self.source:
                    yield x * self.k

        @D.functional_datapipe(name + "_map")
        class MapTimes(D.MapDataPipe):
            def __init__(self, source, k):
                self.source, self.k = source, k

            def __getitem__(self, i):
                return self.source[i] * self.k

        dup = _err(lambda: D.functional_datapipe(name)(Times))
        return (list(R(3).__getattribute__("__class__")(3).__getattr__(name)(5)),
                getattr(M(3), name + "_map")(3)[2], name in dir(R(1)), dup[0],
                dup[1].replace(lib.__name__, "LIB"), name in D.IterDataPipe.functions,
                name + "_map" in D.MapDataPipe.functions, name + "_map" in dir(R(1)))
    both(run)


def test_single_iterator_rule():
    def run(D, R, M, lib):
        r = R(3)
        it1 = iter(r)
        a = next(it1)
        it2 = iter(r)
        b = next(it2)
        e = _err(lambda: next(it1))
        n = r._number_of_samples_yielded

        class Listy(D.IterDataPipe):
            def __init__(self):
                self.items = [4, 5]

            def __iter__(self):
                return iter(self.items)
        q = Listy()
        i1, i2 = iter(q), iter(q)
        e2 = _err(lambda: next(i1))

        class Counting(D.IterDataPipe):
            def __init__(self):
                self.resets = 0

            def reset(self):
                self.resets += 1

            def __iter__(self):
                yield self.resets

        c = Counting()

        class SelfIter(D.IterDataPipe):
            def __init__(self):
                self.i = 0

            def __iter__(self):
                self.i = 0
                return self

            def __next__(self):
                self.i += 1
                if self.i > 3:
                    raise StopIteration
                return self.i
        return (a, b, e, n, e2, next(i2), list(c), list(c), list(SelfIter()),
                list(pickle.loads(pickle.dumps(R(3)))))
    both(run)


def test_exception_names_the_pipe():
    def run(D, R, M, lib):
        class Bad(D.IterDataPipe):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                yield 1
                raise ValueError("boom")
        return _err(lambda: list(Bad(4)))
    both(run)


def test_dataloader_reads_pipes():
    def run(D, R, M, lib):
        return ([b.tolist() for b in D.DataLoader(R(5), batch_size=2)],
                [b.tolist() for b in D.DataLoader(M(5), batch_size=2)])
    both(run)


def test_non_deterministic():
    def run(D, R, M, lib):
        @D.non_deterministic
        class Shuffly(D.IterDataPipe):
            def __init__(self, s):
                self.s = s

            def __iter__(self):
                yield from self.s

        @D.non_deterministic(lambda s, flag=False: flag)
        class Sometimes(D.IterDataPipe):
            def __init__(self, s, flag=False):
                self.s = s

            def __iter__(self):
                yield from self.s

        @D.non_deterministic(lambda s: 5)
        class BadFn(D.IterDataPipe):
            def __init__(self, s):
                self.s = s

            def __iter__(self):
                yield from self.s
        out = [type(Shuffly).__name__, list(Shuffly([1, 2])), list(Sometimes([3], flag=True))]
        with D.guaranteed_datapipes_determinism():
            out += [_err(lambda: Shuffly([1])), list(Sometimes([4])),
                    _err(lambda: Sometimes([1], flag=True))]
        out += [list(Shuffly([5])), _err(lambda: BadFn([1])),
                _err(lambda: D.non_deterministic(int)), _err(lambda: D.non_deterministic(3)),
                _err(lambda: D.non_deterministic(lambda: 1)(int))]
        g = D.guaranteed_datapipes_determinism()        # active from construction
        out.append(_err(lambda: Shuffly([1])))
        g.__exit__(None, None, None)
        out.append(list(Shuffly([6])))
        return out
    both(run)


def test_validation_decorators_shared_paths():
    """The paths where torch's validation works: wrong targets, wrong argument kinds, and
    runtime validation switched off."""
    def run(D, R, M, lib):
        class Checked(D.IterDataPipe):
            def __init__(self, n):
                self.n = n

            @D.runtime_validation
            def __iter__(self):
                yield from range(self.n)

        def not_iter(self):
            yield 1

        @D.argument_validation
        def takes(dp: D.IterDataPipe, k: int):
            return k
        with D.runtime_validation_disabled():
            disabled = list(Checked(3))
        return (disabled, _err(lambda: D.runtime_validation(not_iter)),
                _err(lambda: takes([1], 3)), takes.__name__, Checked.__iter__.__name__)
    both(run)


def test_validation_checks_types_in_ember():
    """ember performs the checks torch's (currently disabled) typing machinery describes."""
    D = ember.utils.data

    class Ints(D.IterDataPipe[int]):
        def __init__(self, items):
            self.items = items

        @D.runtime_validation
        def __iter__(self):
            yield from self.items

    class Pairs(D.IterDataPipe[typing.Tuple[int, str]]):
        def __iter__(self):
            yield (1, "a")

    assert list(Ints([1, 2])) == [1, 2]
    with pytest.raises(RuntimeError, match="Expected an instance as subtype of int"):
        list(Ints([1, "x"]))
    with D.runtime_validation_disabled():
        assert list(Ints([1, "x"])) == [1, "x"]

    @D.argument_validation
    def wants_ints(dp: D.IterDataPipe[int]):
        return list(dp)

    @D.argument_validation
    def wants_numbers(dp: D.IterDataPipe[typing.Union[int, float]]):
        return len(list(dp))
    assert wants_ints(Ints([3])) == [3]
    assert wants_numbers(Ints([3, 4])) == 2
    with pytest.raises(TypeError, match="as a subtype of hint int"):
        wants_ints(Pairs())
    with pytest.raises(TypeError, match="as a IterDataPipe"):
        wants_ints([1])
    assert Pairs.type.issubtype(D.IterDataPipe[tuple].type if hasattr(
        D.IterDataPipe[tuple], "type") else tuple)
    assert not Ints.type.issubtype(str)


def test_builtin_modules_as_torch_names_them():
    """``torch.utils.data.datapipes.iter`` / ``.map``: the wrappers and short class names."""
    def run(D, R, M, lib):
        import importlib
        I = importlib.import_module(lib.__name__ + ".utils.data.datapipes.iter")
        Mp = importlib.import_module(lib.__name__ + ".utils.data.datapipes.map")
        w = I.IterableWrapper([[1], [2]])
        for x in w:
            x.append(9)             # a deep copy per iteration: the source is unchanged
        shallow = I.IterableWrapper([[1]], deepcopy=False)
        for x in shallow:
            x.append(9)
        s = Mp.SequenceWrapper([3, 4, 5])
        return (list(w), len(w), list(shallow), len(s), s[1], Mp.SequenceWrapper({"a": 1})["a"],
                I.Mapper.__name__, I.Filter.__name__, I.Batcher.__name__, I.UnBatcher.__name__,
                I.Collator.__name__, I.Concater.__name__, I.Zipper.__name__, Mp.Mapper.__name__,
                Mp.Batcher.__name__, Mp.Concater.__name__, Mp.Zipper.__name__,
                list(I.Mapper(I.IterableWrapper(range(3)), abs)), list(I.Zipper(R(2), R(3))),
                Mp.Batcher(s, 2)[1], list(I.IterableWrapper(range(4)).batch(3).unbatch()),
                isinstance(s.map(abs), Mp.Mapper))
    both(run)
