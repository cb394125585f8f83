"""DataPipes (PyTorch's ``torch.utils.data.IterDataPipe`` / ``MapDataPipe`` and their
decorators): composable datasets with a functional form for each registered pipe.

    @functional_datapipe("times")
    class Times(IterDataPipe):
        def __init__(self, source, k):
            self.source, self.k = source, k
        def __iter__(self):
            for x in self.source:
                yield x * self.k

    list(MyPipe().times(3).filter(lambda x: x > 2).batch(4))

An ``IterDataPipe`` allows one live iterator at a time: creating a second one invalidates
the first (RuntimeError on its next ``next``), and each new iteration calls ``reset()``.
The built-in pipes and their functional forms (map, filter, batch, ...) are in iter.py and
map.py beside this file (``datapipes.iter.IterableWrapper``, ``datapipes.map.SequenceWrapper``).

Typing: ``IterDataPipe[int]`` is a generic alias; a pipe's ``type`` is the parameter of its
``IterDataPipe[...]`` base (anything, when it has none). ``runtime_validation`` checks each
item ``__iter__`` yields against it, ``argument_validation`` checks arguments annotated with a
DataPipe class. (PyTorch 2.x has switched that typing machinery off, so on torch both raise
AttributeError for pipes that pass the argument checks; ember does the checks.)
"""
import collections.abc
import functools
import inspect
import typing
from typing import Generic, TypeVar, get_type_hints

from ..dataset import Dataset, IterableDataset

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe", "functional_datapipe",
           "guaranteed_datapipes_determinism", "non_deterministic", "argument_validation",
           "runtime_validation", "runtime_validation_disabled"]

_T_co = TypeVar("_T_co", covariant=True)


class DataChunk(list):
    """A batch of items (a list) that remembers the items it was made from."""

    def __init__(self, items):
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent=""):
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        yield from self.items


# ---- the type a pipe declares, and the instance / subtype checks on it ----

def _is_any(tp):
    return tp is typing.Any or isinstance(tp, TypeVar) or tp is Generic or \
        typing.get_origin(tp) is Generic


def _issubinstance(value, tp):
    """Whether `value` is an instance of the (possibly generic) type `tp`."""
    if _is_any(tp):
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        return any(_issubinstance(value, a) for a in args)
    if origin is None:
        return isinstance(value, tp) if isinstance(tp, type) else value == tp
    if origin is typing.Literal:
        return value in args
    if not isinstance(value, origin):
        return False
    if not args:
        return True
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_issubinstance(v, args[0]) for v in value)
        return len(value) == len(args) and all(_issubinstance(v, a) for v, a in zip(value, args))
    if issubclass(origin, collections.abc.Mapping):
        return all(_issubinstance(k, args[0]) and _issubinstance(v, args[-1])
                   for k, v in value.items())
    if issubclass(origin, collections.abc.Iterable) and \
            not issubclass(origin, collections.abc.Iterator):
        return all(_issubinstance(v, args[0]) for v in value)
    return True


def _issubtype(left, right):
    """Whether every value of type `left` is a value of type `right`."""
    if _is_any(right) or left == right:
        return True
    if _is_any(left):
        return False
    lo, ro = typing.get_origin(left), typing.get_origin(right)
    if lo is typing.Union:
        return all(_issubtype(a, right) for a in typing.get_args(left))
    if ro is typing.Union:
        return any(_issubtype(left, a) for a in typing.get_args(right))
    lbase, rbase = lo or left, ro or right
    if not (isinstance(lbase, type) and isinstance(rbase, type) and issubclass(lbase, rbase)):
        return False
    rargs = typing.get_args(right)
    if not rargs:
        return True
    largs = typing.get_args(left)
    if not largs:
        return False
    return len(largs) == len(rargs) and all(_issubtype(a, b) for a, b in zip(largs, rargs))


class _DataPipeType:
    """The item type of a DataPipe (``param``), with the checks made against it."""

    def __init__(self, param):
        self.param = param

    def __repr__(self):
        p = self.param
        return p.__qualname__ if isinstance(p, type) and typing.get_origin(p) is None \
            else repr(p).replace("typing.", "")

    def __eq__(self, other):
        if isinstance(other, _DataPipeType):
            return self.param == other.param
        return NotImplemented

    def __hash__(self):
        return hash(self.param)

    def issubtype(self, other):
        if isinstance(other, _DataPipeType):
            return _issubtype(self.param, other.param)
        if isinstance(other, type):
            return _issubtype(self.param, other)
        raise TypeError(f"Expected '_DataPipeType' or 'type', but found {type(other)}")

    def issubtype_of_instance(self, other):
        return _issubinstance(other, self.param)


_DEFAULT_TYPE = _DataPipeType(Generic[_T_co])


def _declared_type(cls):
    """The parameter of the nearest ``IterDataPipe[...]`` / ``MapDataPipe[...]`` base."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            if isinstance(origin, type) and issubclass(origin, _PipeBase):
                args = typing.get_args(base)
                if args and not isinstance(args[0], TypeVar):
                    return _DataPipeType(args[0])
    return _DEFAULT_TYPE


# ---- the one-live-iterator rule ----

def _args_string(dp):
    try:
        names = set(inspect.signature(type(dp)).parameters)
    except (TypeError, ValueError):
        names = set()
    parts = []
    for name, value in inspect.getmembers(dp):
        if name in names:
            parts.append(f"{name}={value.__name__ if inspect.isfunction(value) else repr(value)}")
    return f"{type(dp).__name__}({', '.join(parts)})"


_FEEDBACK = ("\nFor feedback regarding this single iterator per IterDataPipe constraint, feel "
             "free to comment on this issue: https://github.com/pytorch/data/issues/45.")


def _check_valid(dp, iterator_id):
    if dp._valid_iterator_id != iterator_id:
        raise RuntimeError(
            "This iterator has been invalidated because another iterator has been created from "
            f"the same IterDataPipe: {_args_string(dp)}\nThis may be caused by multiple "
            "references to the same IterDataPipe. We recommend using `.fork()` if that is "
            "necessary." + _FEEDBACK)


def _new_iterator_id(dp):
    dp._valid_iterator_id = 0 if dp._valid_iterator_id is None else dp._valid_iterator_id + 1
    dp.reset()
    return dp._valid_iterator_id


def _thrown_by(e, dp):
    msg = f"\nThis exception is thrown by __iter__ of {_args_string(dp)}"
    if e.args and isinstance(e.args[0], str) and msg not in e.args[0]:
        e.args = (e.args[0] + msg,) + e.args[1:]


class _CheckedIterator:
    """The iterator an ``__iter__`` returned, checked for validity on each ``next``."""

    def __init__(self, iterator, dp):
        self.iterator, self.dp = iterator, dp
        self.iterator_id = _new_iterator_id(dp)

    def __iter__(self):
        return self

    def __next__(self):
        _check_valid(self.dp, self.iterator_id)
        item = next(self.iterator)
        self.dp._number_of_samples_yielded += 1
        return item

    def __getattr__(self, name):
        return getattr(self.iterator, name)


def _hook_iter(fn):
    """Wrap a pipe's ``__iter__``: a generator is checked and counted at each step (its
    iterator id is taken at the first step, which also resets the pipe); an iterator that
    is not the pipe itself is wrapped in a `_CheckedIterator`."""
    if getattr(fn, "_datapipe_hooked", False):
        return fn
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def __iter__(self):
            gen = fn(self)
            iterator_id = value = None
            try:
                while True:
                    if iterator_id is None:
                        iterator_id = _new_iterator_id(self)
                        self._number_of_samples_yielded = 0
                    else:
                        _check_valid(self, iterator_id)
                    try:
                        item = gen.send(value)
                    except StopIteration:
                        return
                    except Exception as e:
                        _thrown_by(e, self)
                        raise
                    self._number_of_samples_yielded += 1
                    value = yield item
            finally:
                gen.close()
    else:
        @functools.wraps(fn)
        def __iter__(self):
            it = fn(self)
            if it is self:      # a pipe that is its own iterator (defines __next__)
                self._number_of_samples_yielded = 0
                return it
            return _CheckedIterator(it, self)
    __iter__._datapipe_hooked = True
    return __iter__


# ---- the pipes ----

class _PipeBase:
    """What both pipe kinds share: the registry of functional forms and the hooks."""
    functions = {}
    reduce_ex_hook = getstate_hook = str_hook = repr_hook = None

    def __getattr__(self, attribute_name):
        fns = type(self)._registry()
        if attribute_name in fns:
            f = fns[attribute_name]
            function = functools.partial(f, self)
            functools.update_wrapper(wrapper=function, wrapped=f, assigned=("__doc__",))
            return function
        raise AttributeError(f"'{self.__class__.__name__}' object has no attribute "
                             f"'{attribute_name}")

    @classmethod
    def register_function(cls, function_name, function):
        cls._registry()[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register,
                                      enable_df_api_tracing=False):
        fns = cls._registry()
        if function_name in fns:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")

        def class_function(source_dp, *args, **kwargs):
            return cls_to_register(source_dp, *args, **kwargs)
        class_function.__doc__ = cls_to_register.__doc__
        fns[function_name] = class_function

    def __getstate__(self):
        state = self.__dict__
        hook = type(self)._kind().getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __reduce_ex__(self, *args, **kwargs):
        hook = type(self)._kind().reduce_ex_hook
        if hook is not None:
            try:
                return hook(self)
            except NotImplementedError:
                pass
        return super().__reduce_ex__(*args, **kwargs)

    @classmethod
    def set_getstate_hook(cls, hook_fn):
        kind = cls._kind()
        if kind.getstate_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing getstate_hook")
        kind.getstate_hook = hook_fn

    @classmethod
    def set_reduce_ex_hook(cls, hook_fn):
        kind = cls._kind()
        if kind.reduce_ex_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing reduce_ex_hook")
        kind.reduce_ex_hook = hook_fn

    def __repr__(self):
        if self.repr_hook is not None:
            return self.repr_hook(self)
        return str(self.__class__.__qualname__)

    def __str__(self):
        if self.str_hook is not None:
            return self.str_hook(self)
        return str(self.__class__.__qualname__)

    def __dir__(self):
        return list(super().__dir__()) + list(type(self)._registry())


class IterDataPipe(_PipeBase, IterableDataset, Generic[_T_co]):
    """An iterable-style DataPipe: subclasses define ``__iter__`` (and ``reset()`` when
    they keep state between iterations). Only one iterator per pipe is valid at a time."""
    functions = {}
    reduce_ex_hook = getstate_hook = str_hook = repr_hook = None
    type = _DEFAULT_TYPE
    _valid_iterator_id = None
    _number_of_samples_yielded = 0

    @classmethod
    def _registry(cls):
        return IterDataPipe.functions

    @classmethod
    def _kind(cls):
        return IterDataPipe

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__iter__" in cls.__dict__:
            cls.__iter__ = _hook_iter(cls.__dict__["__iter__"])
        if "type" not in cls.__dict__:
            cls.type = _declared_type(cls)

    def __iter__(self):
        return self

    def reset(self):
        """Bring the pipe back to its initial state; called when a new iteration starts.
        No-op by default."""


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe of DataFrames."""

    def _is_dfpipe(self):
        return True


class MapDataPipe(_PipeBase, Dataset, Generic[_T_co]):
    """A map-style DataPipe: subclasses define ``__getitem__`` (and ``__len__``)."""
    functions = {}
    reduce_ex_hook = getstate_hook = str_hook = repr_hook = None
    type = _DEFAULT_TYPE

    @classmethod
    def _registry(cls):
        return MapDataPipe.functions

    @classmethod
    def _kind(cls):
        return MapDataPipe

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "type" not in cls.__dict__:
            cls.type = _declared_type(cls)


# ---- decorators ----

class functional_datapipe:
    """Class decorator: register a DataPipe class as a method ``name`` of every pipe of
    its kind (``IterDataPipe`` or ``MapDataPipe``); the source pipe is its first argument."""

    def __init__(self, name, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        if issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls,
                                                       self.enable_df_api_tracing)
        elif issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        return cls


_determinism = False


class guaranteed_datapipes_determinism:
    """While active (from construction to ``__exit__``), building a DataPipe marked
    ``non_deterministic`` raises TypeError."""

    def __init__(self):
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Mark an IterDataPipe class non-deterministic (``@non_deterministic``), or only for
    the arguments where ``deterministic_fn(*args, **kwargs)`` is True
    (``@non_deterministic(fn)``)."""
    cls = None

    def __init__(self, arg):
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError("Only `IterDataPipe` can be decorated with `non_deterministic`"
                                f", but {arg.__name__} is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TypeError(
                    f"{self.cls.__name__} is non-deterministic, but you set "
                    "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                    "DataPipe if that is acceptable for your application")
            return self.cls(*args, **kwargs)
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} is "
                            "found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs):
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TypeError("deterministic_fn of `non_deterministic` decorator is required to "
                            f"return a boolean value, but {type(res)} is found")
        if _determinism and res:
            raise TypeError(
                f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                "DataPipe if that is acceptable for your application")
        return self.cls(*args, **kwargs)


def _pipe_hint(hint):
    """(pipe class, item type) of an annotation naming a DataPipe class, else None."""
    base = typing.get_origin(hint) or hint
    if isinstance(base, type) and issubclass(base, (IterDataPipe, MapDataPipe)):
        args = typing.get_args(hint)
        return base, (_DataPipeType(args[0]) if args else base.type)
    return None


def argument_validation(f):
    """Check, on each call, that arguments annotated with a DataPipe class are pipes of
    that class whose item type is a subtype of the annotation's."""
    signature = inspect.signature(f)
    hints = get_type_hints(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            spec = _pipe_hint(hints[name]) if name in hints else None
            if spec is None:
                continue
            if not isinstance(value, IterDataPipe):
                raise TypeError(f"Expected argument '{name}' as a IterDataPipe, but found "
                                f"{type(value)}")
            if not value.type.issubtype(spec[1]):
                raise TypeError(f"Expected type of argument '{name}' as a subtype of hint "
                                f"{spec[1]}, but found {value.type}")
        return f(*args, **kwargs)
    return wrapper


_runtime_validation_enabled = True


class runtime_validation_disabled:
    """Turns ``runtime_validation`` off, from construction to ``__exit__``."""

    def __init__(self):
        global _runtime_validation_enabled
        self.prev = _runtime_validation_enabled
        _runtime_validation_enabled = False

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def runtime_validation(f):
    """Decorate a pipe's ``__iter__``: each item it yields must be an instance of the pipe's
    ``type`` (RuntimeError otherwise), unless ``runtime_validation_disabled`` is active."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        if not _runtime_validation_enabled:
            yield from f(self)
        else:
            for d in f(self):
                if not self.type.issubtype_of_instance(d):
                    raise RuntimeError(f"Expected an instance as subtype of {self.type}, but "
                                       f"found {d}({type(d)})")
                yield d
    return wrapper
