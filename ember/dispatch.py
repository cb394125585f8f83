"""The single call path every op takes: unwrap -> promote -> kernel -> wrap -> record.

Pointwise ops get a function generated once per op at registration (`make_pointwise`), with
a short path for the common case (tensors of one dtype, no mode active). Other kinds call
`run_op`. Both end in `finish`, which wraps the backend result in a Tensor and, when grad
mode is on and an input requires grad, records an autograd node (ember/autograd/graph.py).
"""
import math

import numpy as np

from .core import dtype as D
from .core.tensor import Tensor, _init, _new
from .core.meta import MetaArray, MetaData, device_mismatch
from .core.strides import broadcast_shapes
from .core import memory_stats
from .core.lowp_cast import astype as _astype   # C kernels for the 16-bit floats
from .autograd.grad_mode import state, call_mode  # noqa: F401  (the mode seam)
from .autograd import graph
from .dispatch_args import (argument_error, int_arg, tensor_args,  # noqa: F401  (re-exported)
                            ARG_ERRORS, raise_as_torch)

ndarray = np.ndarray
_asarray = np.asanyarray    # (any: a meta array, an ndarray subclass, stays one)

LOWP = (D.float16, D.bfloat16)
TORCH_NAMES, torch_name = D.TORCH_NAMES, D.torch_name   # dtype names live in core/dtype.py


def wrap(arr, dt):
    """A fresh tensor owning the backend array `arr` (0-d NumPy scalars become arrays)."""
    if type(arr) is not ndarray:
        arr = _asarray(arr)
    npdt = dt.np
    if arr.dtype is not npdt and arr.dtype != npdt:   # `is`: NumPy's dtypes are singletons
        arr = _astype(arr, npdt)
    t = _new(Tensor)
    _init(t, arr, dt)
    if state.inference:
        t._inference = True
    return t


def operand(x):
    """(backend value, dtype, category) of a tensor or Python scalar, for promotion."""
    if x is None:
        return None, None, -1
    if isinstance(x, Tensor):
        return x._data, x.dtype, 0 if x._data.ndim else 1
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return x, D.scalar_dtype(x), 2
    raise TypeError(f"expected Tensor or number, but got {type(x).__name__}")


# ---- dtype rules of pointwise ops: promoted dtype -> (compute dtype, result dtype) ----
def rule_promote(dt, name):
    return dt, dt


def rule_float(dt, name):
    if dt._kind >= 2:      # floating or complex
        return dt, dt
    f = D.get_default_dtype()
    return f, f


def rule_compare(dt, name):
    return dt, D.bool_


def not_implemented(kernel_name, dt):
    """PyTorch's error for a dtype its kernel has no loop for (a NotImplementedError, which is
    a RuntimeError); `kernel_name` is the name PyTorch's message gives, e.g. "abs_cpu"."""
    return NotImplementedError(f'"{kernel_name}" not implemented for \'{torch_name(dt)}\'')


def rule_integral(dt, name):
    if dt._kind >= 2:
        raise not_implemented(name + "_cpu", dt)
    return dt, dt


def _scalar_for(x, cdt):
    """Python scalars stay weak so NumPy keeps the tensor's dtype; wrap ints that overflow it."""
    if cdt._kind >= 2 or isinstance(x, bool):
        return x
    if isinstance(x, float):
        return x
    info = np.iinfo(cdt.np) if cdt is not D.bool_ else None
    if info is not None and not (info.min <= x <= info.max):
        return np.array(x, dtype=np.int64).astype(cdt.np)
    return x


def checked_scalar(x, dt):
    """A Python number converted where PyTorch checks that it fits `dt` (fill values, clamp
    bounds, pow exponents): RuntimeError on overflow, like c10's checked_convert. Integers may
    wrap into unsigned types down to -max; floats truncate toward zero; inf/nan never fit an
    integral type; finite floats beyond a floating type's range do not fit it (nor finite
components beyond a complex type's)."""
    if dt is D.bool_:
        return bool(x)
    if isinstance(x, bool):
        return int(x)
    if dt.is_complex:       # each component as a float of the component type
        z, top = complex(x), float(np.finfo(dt.np).max)
        if any(math.isfinite(c) and abs(c) > top for c in (z.real, z.imag)):
            raise RuntimeError(f"value cannot be converted to type {CPP_TYPES[dt.name]} "
                               "without overflow")
        return x
    if isinstance(x, complex):
        raise RuntimeError(f"value cannot be converted to type {CPP_TYPES[dt.name]} without "
                           "overflow")
    if dt.is_floating_point:
        if isinstance(x, (int, float)) and math.isfinite(x) and abs(x) > D.finfo(dt).max:
            raise RuntimeError(f"value cannot be converted to type {CPP_TYPES[dt.name]} without "
                               "overflow")
        return x
    info = np.iinfo(dt.np)
    lo = -int(info.max) if info.min == 0 and isinstance(x, int) else int(info.min)
    if not (isinstance(x, float) and not math.isfinite(x)) and lo <= x <= int(info.max):
        return int(x)
    raise RuntimeError(f"value cannot be converted to type {CPP_TYPES[dt.name]} without overflow")


def fill_scalar(value, dt):
    """A Python fill value as torch's full converts it: a Scalar (ints up to 2**64 - 1) that
    must fit `dt` (RuntimeError "value cannot be converted to type int64_t without
    overflow"); a negative int wraps into an unsigned dtype."""
    if isinstance(value, Tensor) or not isinstance(value, (int, float, complex)):
        return value
    if type(value) is int and not -2 ** 63 <= value < 2 ** 64:   # (torch's parser)
        raise OverflowError("int too big to convert" if value > 0 else
                            "can't convert negative int to unsigned")
    v = checked_scalar(value, dt)
    if type(v) is int and v < 0 and not dt.is_floating_point and not dt.is_complex and \
            np.iinfo(dt.np).min == 0:
        v %= 1 << (8 * np.dtype(dt.np).itemsize)
    return v


CPP_TYPES = D.CPP_TYPES


def broadcast_error(values):
    shapes = [np.shape(v) for v in values]
    broadcast_shapes(*shapes)  # raises PyTorch's message


def check_int_division(op, cdt, dividend, divisor):
    # an empty result divides nothing, so PyTorch does not raise then
    if cdt._kind < 2 and np.size(dividend) and np.any(np.asarray(divisor) == 0):
        raise RuntimeError("ZeroDivisionError")


def cast_error(rdt, out_dt):
    return RuntimeError(f"result type {torch_name(rdt)} can't be cast to the desired output "
                        f"type {torch_name(out_dt)}")


def check_out_shape(out, values):
    """An in-place result must have self's shape: operands may broadcast to it, not beyond."""
    try:
        shape = np.broadcast_shapes(*[np.shape(v) for v in values])
    except ValueError:
        broadcast_error(values)
        raise
    if shape != out._data.shape:
        raise RuntimeError(f"output with shape {list(out._data.shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")


def check_overlap(t):
    """Writing into a tensor whose elements share memory (an expanded one) is an error."""
    a = t._data
    if a.size > 1 and 0 in a.strides and any(n > 1 and st == 0
                                             for n, st in zip(a.shape, a.strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")


def make_pointwise(op):
    """Generate the public function, and the in-place method, of a pointwise op."""
    kernel, ufunc, rule, name = op.kernel, op.ufunc, op.dtype_rule, op.name
    precheck = getattr(op, "precheck", None)   # argument checks that need the raw operands
    exact_scalar = getattr(op, "exact_scalar", False)
    native_lowp = getattr(op, "native_lowp", False)
    scalars_promote = getattr(op, "scalars_promote", True)
    # ops whose torch signature takes Tensors only (atan2, maximum, logical_and, ...): a
    # Python number there is torch's TypeError, not a weak scalar
    tensor_only = getattr(op, "tensor_only", False)
    # comparisons and logical ops write their bools into a self of any dtype
    bool_result = rule is rule_compare or getattr(rule, "base", None) is rule_compare
    nin = len(op.inputs)
    # ember/__init__ turns NumPy's warnings off unless EMBER_NUMPY_WARNINGS=1 asks to keep
    # them; only then do kernels need their own errstate
    errstate = op.errstate and np.geterr()["invalid"] != "ignore"
    int_div = op.int_div_check
    defaults = op.attrs

    # result dtype when every input is a tensor of dtype `d` and the kernel may run as-is
    fast_dtype = {}
    for d in D.ALL:
        if d.np is None:
            continue
        try:
            cdt, rdt = rule(d, name)
        except RuntimeError:
            continue
        if cdt is d and not int_div and d not in LOWP:
            fast_dtype[d] = rdt

    def compute(args, attrs, out=None):
        if tensor_only:
            for n, x in zip(op.inputs, args):
                if not isinstance(x, Tensor):
                    raise TypeError(f"{name}(): argument '{'input' if n == 'self' else n}' "
                                    f"must be Tensor, not {type(x).__name__}")
        values, metas = [], []
        for k, x in enumerate(args):
            try:
                v, d, cat = operand(x)
            except TypeError:
                # torch's argument parser: the op, the argument's name and position
                n = op.inputs[k] if k < len(op.inputs) else "input"
                raise TypeError(f"{name}(): argument '{'input' if n == 'self' else n}' "
                                f"(position {k + 1}) must be Tensor, not "
                                f"{type(x).__name__}") from None
            values.append(v)
            metas.append((d, cat))
        pdt = (D.result_type_of([m for m in metas if m[1] >= 0 and (m[1] < 2 or
                                                                    scalars_promote)])
               if nin > 1 else metas[0][0])
        if out is not None:
            # in place, PyTorch checks shape, then dtype, before it looks for a kernel
            check_out_shape(out, [v for v, m in zip(values, metas) if m[1] >= 0])
            if not bool_result and not D.can_cast(pdt, out.dtype):
                raise cast_error(pdt, out.dtype)
        if precheck is not None:
            precheck(values, metas, pdt, attrs)
        try:
            cdt, rdt = rule(pdt, name)
        except RuntimeError:
            # torch's TensorIterator broadcasts the operands before it picks a kernel: a
            # shape mismatch is reported before a dtype the kernel lacks
            broadcast_error([v for v, m in zip(values, metas) if m[1] >= 0])
            raise
        if out is not None and not D.can_cast(rdt, out.dtype):
            raise cast_error(rdt, out.dtype)
        # low precision computes in float32 (PyTorch's "opmath"), scalars rounded to it first
        kdt = D.float32 if cdt in LOWP and not native_lowp else cdt
        round_scalars = kdt is not cdt and not exact_scalar
        arrays = []
        for v, (d, cat) in zip(values, metas):
            if cat < 0:
                arrays.append(None)
            elif cat == 2:
                arrays.append(float(np.asarray(v, cdt.np)) if round_scalars
                              else _scalar_for(v, kdt))
            elif d is kdt:
                arrays.append(v)
            elif kdt is not cdt and d is not cdt:
                # PyTorch first converts operands to the common dtype (an int32 tensor with a
                # float16 one: 70000 -> inf), then computes in float32
                arrays.append(v.astype(cdt.np).astype(kdt.np))
            else:
                arrays.append(_astype(v, kdt.np))
        if int_div:
            check_int_division(op, cdt, arrays[0], arrays[1])
        try:
            if errstate:
                with np.errstate(all="ignore"):
                    r = kernel(np, *arrays, **attrs) if attrs or ufunc is None else ufunc(*arrays)
            else:
                r = kernel(np, *arrays, **attrs) if attrs or ufunc is None else ufunc(*arrays)
        except ValueError:
            broadcast_error(arrays)
            raise
        return r, rdt

    def function(*args, out=None, **kwargs):
        st = state.__dict__      # this thread's grad-mode fields: one thread-local read per call
        if st["modes"]:
            return call_mode(op, function, args, dict(kwargs, out=out) if out is not None
                             else kwargs)
        if len(args) != nin:
            args = _bind(op, args, kwargs)
        attrs = _attrs(op, kwargs, defaults) if kwargs else {}
        try:
            a0 = args[0]
            if (nin == 1 and not attrs and not errstate and isinstance(a0, Tensor)
                    and a0.dtype in fast_dtype):
                r = ufunc(a0._data) if ufunc is not None else kernel(np, a0._data)
                rdt = fast_dtype[a0.dtype]
            elif (nin == 2 and not attrs and ufunc is not None and not errstate
                  and isinstance(a0, Tensor) and isinstance(args[1], Tensor)
                  and a0.dtype is args[1].dtype and a0.dtype in fast_dtype):
                try:
                    r = ufunc(a0._data, args[1]._data)
                except ValueError:
                    broadcast_error([a0._data, args[1]._data])
                    raise
                rdt = fast_dtype[a0.dtype]
            elif (nin == 2 and not attrs and ufunc is not None and not errstate
                  and not tensor_only and isinstance(a0, Tensor) and type(args[1]) in _PY_NUMBER
                  and a0.dtype in fast_float):
                # float tensor with a Python number: the number is weak, NumPy keeps the dtype
                r = ufunc(a0._data, args[1])
                rdt = fast_dtype[a0.dtype]
            elif (nin == 2 and not attrs and ufunc is not None and not errstate
                  and not tensor_only and type(a0) in _PY_NUMBER and isinstance(args[1], Tensor)
                  and args[1].dtype in fast_float):
                r = ufunc(a0, args[1]._data)
                rdt = fast_dtype[args[1].dtype]
            else:
                r, rdt = compute(args, attrs)
            # wrap(r, rdt), inline
            if type(r) is not ndarray:
                r = _asarray(r)
            npdt = rdt.np
            if r.dtype is not npdt and r.dtype != npdt:
                r = r.astype(npdt)
            result = _new(Tensor)
            _init(result, r, rdt)
            if st["inference"]:
                result._inference = True
            if st["enabled"] and op.grads:
                for x in args:
                    if isinstance(x, Tensor) and x._requires_grad:
                        graph.record(op, args, result, attrs)
                        break
            if out is not None:
                return copy_into_out(out, result)
            return result
        except MetaData:    # an input is a meta tensor: the op's meta rule instead
            return run_meta(op, args, dict(attrs, out=out) if out is not None else attrs)

    def inplace(self, *args, **kwargs):
        if state.modes:
            return call_mode(op, inplace, (self,) + args, kwargs)
        args = (self,) + args
        if len(args) != nin:
            args = _bind(op, args, kwargs)
        attrs = _attrs(op, kwargs, defaults) if kwargs else {}
        graph.check_inplace(self)
        check_overlap(self)
        try:
            r, rdt = compute(args, attrs, self)
        except MetaData:
            return run_meta_inplace(op, args, attrs)
        needs_graph = state.enabled and op.grads and any(
            isinstance(x, Tensor) and x._requires_grad for x in args)
        old = graph.snapshot_for_inplace(op, self) if needs_graph else None
        np.copyto(self._data, r, casting="unsafe")
        if not (state.inference and self._inference):
            self._bump_version()
        if needs_graph:
            graph.record_inplace(op, args, self, attrs, old)
        return self

    fast_float = {d: r for d, r in fast_dtype.items() if d in (D.float32, D.float64)}
    function._dispatches = inplace._dispatches = True   # they check the mode stack themselves
    return function, inplace


# ---- autocast: an op's OpDef.amp policy, applied around its function ----
# ember/amp (which sits above dispatch) fills both slots when it is imported:
# autocast_hook(op, fn, args, kwargs) casts the arguments per op.amp and calls fn;
# autocast_args(op, *tensors) only casts (for hand-written fronts that check autocast
# themselves, as they check the mode stack: matmul, the composites).
autocast_hook = None
autocast_args = None


def with_autocast(op, fn):
    """`fn` behind op's autocast policy: inside an autocast region the arguments are cast
    per `op.amp` first (the registry wraps every op that declares one). The wrapper keeps
    `fn`'s name (the tracer records it) and whether `fn` checks the mode stack itself."""
    def autocast_wrapper(*args, **kwargs):
        if state.autocast_enabled:
            return autocast_hook(op, fn, args, kwargs)
        return fn(*args, **kwargs)
    autocast_wrapper.__name__ = getattr(fn, "__name__", op.name)
    autocast_wrapper.__qualname__ = autocast_wrapper.__name__
    autocast_wrapper.__doc__ = getattr(fn, "__doc__", None)
    autocast_wrapper.__wrapped__ = fn
    if getattr(fn, "_dispatches", False):
        autocast_wrapper._dispatches = True
    return autocast_wrapper


# ---- the mode seam: tracing, profiling, autocast-like interceptors ----
def with_mode_seam(op, fn):
    """Wrap a hand-written op so that every call passes the mode check: the one place a
    mode sees all ops (pointwise functions generated by make_pointwise check it inline)."""
    if getattr(fn, "_dispatches", False):
        return fn

    def dispatched(*args, **kwargs):
        try:
            if state.modes:
                return call_mode(op, fn, args, kwargs)
            try:
                return fn(*args, **kwargs)
            except MetaData:    # an input is a meta tensor: the op's meta rule instead
                return run_meta(op, args, kwargs)
        except ARG_ERRORS as exc:
            # (free until something raises) what torch's argument parser would have said
            better = argument_error(op, fn, args, kwargs, exc)
            if better is None:
                raise
            raise better from exc
    dispatched.__name__ = getattr(fn, "__name__", str(op))
    dispatched.__qualname__ = dispatched.__name__
    dispatched.__doc__ = getattr(fn, "__doc__", None)
    dispatched.__wrapped__ = fn
    dispatched._dispatches = True
    return dispatched


_PY_NUMBER = (int, float)


# ---- the meta device: an op that meets a meta tensor runs its meta rule ----
# A meta tensor's array raises MetaData as soon as a kernel computes with it (core/meta.py);
# the op's entry above catches it, so the cpu path pays for a `try` block only (free in
# CPython 3.11+). `meta_inplace_hook(op, args, attrs)` is set by ember/ops/meta_rules.py.
meta_inplace_hook = None


def _tensors_in(args, kwargs):
    for x in tuple(args) + tuple(kwargs.values()):
        if isinstance(x, Tensor):
            yield x
        elif isinstance(x, (list, tuple)):
            for y in x:
                if isinstance(y, Tensor):
                    yield y


# True while ember.export traces on meta tensors (ember/export/_fake.py): a composite op's
# own cpu helpers (index arrays, interpolation weights) then meet its meta input, and only
# the metadata of what the op returns is wanted
mixed_meta_ok = False


def check_meta_devices(args, kwargs):
    """torch's error for meta tensors mixed with cpu tensors (0-dim cpu tensors are allowed,
    as torch allows them next to tensors of any device)."""
    if mixed_meta_ok:
        return
    expected = None
    for t in _tensors_in(args, kwargs):
        meta = type(t._data) is MetaArray
        if not meta and t._data.ndim == 0:
            continue
        dev = "meta" if meta else "cpu"
        if expected is None:
            expected = dev
        elif dev != expected:
            raise device_mismatch(dev, expected)


def run_meta(op, args, kwargs):
    """Run `op`'s meta rule (OpDef.meta) on `args`, which hold a meta tensor."""
    check_meta_devices(args, kwargs)
    rule = getattr(op, "meta", None)
    if rule is None:
        name = getattr(op, "name", op)
        raise NotImplementedError(f"{name}: attempted to run this operator with Meta tensors, "
                                  "but there was no meta rule registered (ember has no "
                                  "data-independent implementation of it)")
    return rule(*args, **kwargs)


def run_meta_inplace(op, args, attrs):
    check_meta_devices(args, attrs)
    return meta_inplace_hook(op, args, attrs)


def _bind(op, args, kwargs):
    """Move tensor inputs passed by keyword (``add(input=a, other=b)``) into position."""
    args = list(args)
    names = op.inputs
    for i in range(len(args), len(names)):
        n = "input" if names[i] == "self" else names[i]
        if n in kwargs:
            args.append(kwargs.pop(n))
        elif names[i] in kwargs:
            args.append(kwargs.pop(names[i]))
        else:
            break
    # trailing positional attrs (e.g. clamp(x, 0, 1), add(a, b, 2)) become keyword attrs
    extra = args[len(names):]
    if extra:
        for (k, _), v in zip(op.attrs.items(), extra):
            kwargs[k] = v
        args = args[:len(names)]
    if len(args) != len(names):
        raise TypeError(f"{op.name}() missing required argument '{names[len(args)]}'")
    return tuple(args)


def _attrs(op, kwargs, defaults):
    out = {}
    for k, v in kwargs.items():
        if k not in defaults:
            raise TypeError(f"{op.name}() got an unexpected keyword argument '{k}'")
        d = defaults[k]
        if v is not d and (type(v) is not type(d) or v != d):
            out[k] = v
    return out


def copy_into_out(out, result):
    """Write an op's result into the user's `out=` tensor (resizing an empty one)."""
    if not D.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {torch_name(result.dtype)} can't be cast to the "
                           f"desired output type {torch_name(out.dtype)}")
    if out._data.shape != result._data.shape:
        out._data = np.empty(result._data.shape, out.dtype.np)
        out._storage = None
        memory_stats.note(out._data)
    np.copyto(out._data, result._data, casting="unsafe")
    out._bump_version()
    return out
