"""ember.save / ember.load: checkpoints of nested containers of tensors, safe to load.

File format (the layout of PyTorch's zip checkpoints): a zip archive holding
``archive/data.pkl`` (the object structure), ``archive/data/<key>`` (the raw bytes of each
storage, once, however many tensors view it), ``archive/byteorder`` and ``archive/version``.
In data.pkl every tensor is a call ``_rebuild_tensor(storage, offset, shape, stride,
requires_grad)`` whose storage is a persistent reference ``('storage', dtype, key, 'cpu',
numel)``, so tensors that shared memory share it again after loading.

Loading never runs code chosen by the file: data.pkl is read by an Unpickler whose
`find_class` only hands out an explicit allowlist of builders (ember's and the PyTorch names
that ``torch.save`` writes: ``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``...,
mapped to ember builders; torch itself is never imported). Anything else is refused with
``pickle.UnpicklingError`` unless the caller passes ``weights_only=False``. Tensor layouts
read from the file are bounds-checked against their storage before any view is made.

Saving to a path is atomic: the archive goes to a temporary file in the same folder, which
is flushed, fsync'ed and then renamed over the target, so a crash mid-save leaves the
previous checkpoint intact.

``save_safetensors`` / ``load_safetensors`` read and write the safetensors format through the
optional ``safetensors`` package (bfloat16 via ml_dtypes).
"""
import collections
import io
import os
import pickle
import sys
import tempfile
import zipfile
import zlib

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .core import dtype as D
from .core.storage import Storage
from .core.tensor import Tensor, Size

_VERSION = "ember-1\n"


# ------------------------------------------------------------------------------------------
# saving
# ------------------------------------------------------------------------------------------
class _Pickler(pickle.Pickler):
    """Pickles tensors as (storage reference, layout) and collects the storages to write."""

    def __init__(self, f, protocol):
        super().__init__(f, protocol=protocol)
        self.storages = {}     # id(Storage) -> (key, flat array); keeps them alive

    def persistent_id(self, obj):
        if isinstance(obj, _StorageToSave):
            entry = self.storages.get(id(obj.storage))
            if entry is None:
                entry = self.storages[id(obj.storage)] = (str(len(self.storages)), obj.storage)
            flat = obj.storage.data
            return ("storage", D.from_numpy_dtype(flat.dtype).name, entry[0], "cpu", flat.size)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            if isinstance(obj, Parameter):
                return (_rebuild_parameter, (_plain(obj), obj.requires_grad))
            st = obj._storage_obj()
            if st.data.dtype != obj._data.dtype or st.data.ndim != 1 or \
                    st.data.strides[0] != st.data.itemsize:
                # a dtype-reinterpreting view: save its own copy (sharing is not kept)
                st = Storage(np.ascontiguousarray(obj._data).reshape(-1))
                return (_rebuild_tensor, (_StorageToSave(st), 0, tuple(obj.shape),
                                          _contig(obj.shape), obj.requires_grad))
            return (_rebuild_tensor, (_StorageToSave(st), obj.storage_offset(),
                                      tuple(obj.shape), obj.stride(), obj.requires_grad))
        if isinstance(obj, Size):
            return (Size, (tuple(obj),))
        return NotImplemented


class _StorageToSave:
    __slots__ = ("storage",)

    def __init__(self, storage):
        self.storage = storage


def _plain(t):
    """A plain Tensor over `t`'s storage (so a Parameter's data is saved like any tensor)."""
    p = Tensor._make(t._data, t.dtype)
    p._storage = t._storage_obj()
    return p


def _contig(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def _write_archive(obj, fh, protocol):
    buf = io.BytesIO()
    p = _Pickler(buf, protocol)
    p.dump(obj)
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr("archive/data.pkl", buf.getvalue())
        zf.writestr("archive/byteorder", sys.byteorder)
        zf.writestr("archive/version", _VERSION)
        for key, storage in p.storages.values():
            flat = np.ascontiguousarray(storage.data)
            with zf.open(f"archive/data/{key}", "w", force_zip64=flat.nbytes > 2 ** 31) as out:
                out.write(memoryview(flat.view(np.uint8)))


def _atomic_write(path, write):
    """Call ``write(fh)`` on a temporary file next to `path`, then rename it over `path`."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        try:   # mkstemp makes the file private; give it the mode a plain open() would
            mode = os.stat(path).st_mode & 0o777
        except OSError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:   # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def save(obj, f, pickle_module=None, pickle_protocol=4, _use_new_zipfile_serialization=True):
    """Save `obj` (nested dicts / lists / tuples of tensors, numbers, strings...) to `f`, a
    path or a writable binary file object. Writing to a path is atomic."""
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(f, lambda fh: _write_archive(obj, fh, pickle_protocol))
    else:
        _write_archive(obj, f, pickle_protocol)


# ------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------
class _LoadedStorage:
    """A storage read from the archive: its flat array and the Storage its tensors share."""
    __slots__ = ("storage", "dtype")

    def __init__(self, flat, dtype):
        self.storage = Storage(flat)
        self.dtype = dtype


def _check_layout(storage, offset, shape, stride):
    ok = isinstance(storage, _LoadedStorage) and isinstance(offset, int) and offset >= 0 and \
        len(shape) == len(stride) and all(isinstance(s, int) and s >= 0 for s in shape) and \
        all(isinstance(s, int) and s >= 0 for s in stride)
    if ok:
        n = storage.storage.data.size
        if all(shape):
            ok = offset + sum((sz - 1) * st for sz, st in zip(shape, stride)) < n
        else:
            ok = offset <= n
    if not ok:
        raise RuntimeError(f"ember.load: corrupt checkpoint: tensor layout (offset={offset}, "
                           f"shape={tuple(shape)}, stride={tuple(stride)}) does not fit its "
                           "storage")


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False, *_):
    """A tensor viewing `storage` with the given layout (shares the Storage object)."""
    size, stride = tuple(size), tuple(stride)
    _check_layout(storage, storage_offset, size, stride)
    flat = storage.storage.data
    item = flat.itemsize
    arr = as_strided(flat[storage_offset:], size, tuple(s * item for s in stride))
    t = Tensor._make(arr, storage.dtype)
    t._data = arr          # keep the saved strides even when empty (as views do)
    t._storage = storage.storage
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    return _rebuild_tensor(storage, storage_offset, size, stride, requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    from .nn.parameter import Parameter
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError("ember.load: a Parameter must wrap a tensor")
    return Parameter(data, requires_grad)


class _TorchStorageType:
    """Stands in for ``torch.FloatStorage`` & co. inside a torch checkpoint's storage refs."""

    def __init__(self, dtype):
        self.dtype = dtype


_TORCH_STORAGES = {"DoubleStorage": D.float64, "FloatStorage": D.float32,
                   "HalfStorage": D.float16, "BFloat16Storage": D.bfloat16,
                   "LongStorage": D.int64, "IntStorage": D.int32, "ShortStorage": D.int16,
                   "CharStorage": D.int8, "ByteStorage": D.uint8, "BoolStorage": D.bool_}

_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("builtins", "slice"): slice,
    ("_codecs", "encode"): lambda s, enc="utf-8": s.encode(enc),  # protocol-2 bytes
    ("ember.serialization", "_rebuild_tensor"): _rebuild_tensor,
    ("ember.serialization", "_rebuild_parameter"): _rebuild_parameter,
    ("ember.core.dtype", "_by_name"): D._by_name,
    ("ember.core.tensor", "Size"): Size,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch", "Size"): Size,
}
_ALLOWED.update({("torch", k): _TorchStorageType(v) for k, v in _TORCH_STORAGES.items()
                 if v.np is not None})
_ALLOWED.update({("torch", d.name): d for d in D.ALL if d.np is not None})
_ALLOWED.update({("torch", k): v for k, v in D._ALIASES.items()})


# ---- the caller's allowlist (torch.serialization's add_safe_globals / safe_globals) ----
# classes and functions a weights_only load may build besides tensors and containers: a
# whole pickled Module needs its classes here. Entries are objects, or (object, "module.name")
# pairs naming where the file says it lives.
_SAFE_GLOBALS = []


def add_safe_globals(safe_globals):
    """Allow ``load(weights_only=True)`` to build these classes/functions (a list of objects
    or ``(object, "module.name")`` pairs), for the rest of the process.

    >>> ember.serialization.add_safe_globals([MyModel])
    """
    _SAFE_GLOBALS.extend(list(safe_globals))


def get_safe_globals():
    """The objects `add_safe_globals` and `safe_globals` allow now, in the order given."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals():
    """Forget every object `add_safe_globals` allowed."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with ember.serialization.safe_globals([MyModel, nn.Linear]): ember.load(f)``: the
    objects are allowed inside the block only."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._before = list(_SAFE_GLOBALS)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _SAFE_GLOBALS[:] = self._before
        return False


def _safe_global(module, name):
    """The caller-allowed object the file calls `module.name`, or None."""
    want = f"{module}.{name}"
    for entry in _SAFE_GLOBALS:
        if isinstance(entry, tuple) and len(entry) == 2 and entry[1] == want:
            return entry[0]
        if not isinstance(entry, tuple) and f"{getattr(entry, '__module__', None)}." \
                f"{getattr(entry, '__qualname__', None)}" == want:
            return entry
    return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, read_storage, weights_only):
        super().__init__(fh)
        self._read_storage = read_storage
        self._weights_only = weights_only
        self._storages = {}

    def find_class(self, module, name):
        builder = _ALLOWED.get((module, name))
        if builder is None and _SAFE_GLOBALS:
            builder = _safe_global(module, name)
        if builder is not None:
            return builder
        if not self._weights_only and not module.split(".")[0] == "torch":
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"Weights only load failed: the file asks for the global '{module}.{name}', which "
            "is not an allowed type. ember.load(weights_only=True) only builds tensors, "
            "containers, numbers and strings; if (and only if) you trust the file, pass "
            "weights_only=False, or allow the global with "
            f"ember.serialization.add_safe_globals([{module}.{name}]) or the "
            "ember.serialization.safe_globals([...]) context manager.")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"ember.load: unsupported persistent id {pid!r:.80}")
        _, kind, key, location, numel = pid
        if isinstance(kind, _TorchStorageType):
            dtype = kind.dtype
        elif isinstance(kind, str) and kind in D._NAMES:
            dtype = D._NAMES[kind]
        else:
            raise pickle.UnpicklingError(f"ember.load: unsupported storage type {kind!r:.80}")
        if not isinstance(key, str) or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError("ember.load: malformed storage reference")
        st = self._storages.get(key)
        if st is None:
            st = self._storages[key] = _LoadedStorage(self._read_storage(key, dtype, numel),
                                                       dtype)
        return st


def _corrupt(name, why):
    return RuntimeError(f"ember.load: {name} is not a readable ember/PyTorch checkpoint "
                        f"(the file may be truncated or corrupt): {why}")


def _load_archive(fh, name, map_location, weights_only):
    pos = fh.tell()
    empty = not fh.read(1)
    fh.seek(pos)
    if empty:   # EOFError, as torch.load gives for an empty file
        raise EOFError(f"ember.load: {name} is empty (nothing was saved to it)")
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        raise _corrupt(name, e) from None
    with zf:
        pkl = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkl:
            raise _corrupt(name, "no data.pkl record in the archive")
        prefix = pkl[0][:-len("data.pkl")]
        try:
            order = zf.read(prefix + "byteorder").decode().strip()
        except KeyError:
            order = "little"

        def read_storage(key, dtype, numel):
            flat = np.empty(numel, dtype.np)
            view = memoryview(flat.view(np.uint8))
            try:
                with zf.open(f"{prefix}data/{key}") as src:
                    got = src.readinto(view) if numel else 0
            except KeyError:
                raise _corrupt(name, f"storage record {key!r} is missing") from None
            if got != flat.nbytes:
                raise _corrupt(name, f"storage record {key!r} has {got} bytes, expected "
                                     f"{flat.nbytes}")
            if order != sys.byteorder and flat.itemsize > 1:
                flat = flat.byteswap()
            return flat

        try:
            data = zf.read(pkl[0])
            return _Unpickler(io.BytesIO(data), read_storage, weights_only).load()
        except (zipfile.BadZipFile, EOFError, zlib.error, ValueError) as e:
            raise _corrupt(name, e) from None


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kw):
    """Load what `save` (or ``torch.save``, zip format) wrote to `f` (a path or a readable
    binary file object).

    With ``weights_only=True`` (the default) only tensors, Parameters, dtypes, containers,
    numbers and strings can be built: a file asking for anything else raises
    ``pickle.UnpicklingError``. Tensors always load onto the CPU; `map_location` is accepted
    for compatibility."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_archive(fh, repr(os.fspath(f)), map_location, weights_only)
    return _load_archive(f, "the file object", map_location, weights_only)


# ------------------------------------------------------------------------------------------
# safetensors
# ------------------------------------------------------------------------------------------
_ST_DTYPES = {"F64": D.float64, "F32": D.float32, "F16": D.float16, "BF16": D.bfloat16,
              "I64": D.int64, "I32": D.int32, "I16": D.int16, "I8": D.int8, "U8": D.uint8,
              "BOOL": D.bool_}


def _safetensors():
    try:
        import safetensors
        import safetensors.numpy  # noqa: F401
    except ImportError:
        raise ImportError("ember's safetensors support needs the 'safetensors' package: "
                          "pip install safetensors") from None
    return safetensors


def save_safetensors(tensors, path, metadata=None):
    """Write a dict of name -> tensor to `path` in the safetensors format (atomically).

    Each tensor is stored as its own contiguous copy (the format has no shared storage)."""
    st = _safetensors()
    arrays = {}
    for k, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"save_safetensors: {k!r} is a {type(t).__name__}, not a Tensor")
        arrays[k] = np.ascontiguousarray(t._data)
    blob = st.numpy.save(arrays, metadata=metadata)
    _atomic_write(path, lambda fh: fh.write(blob))


def load_safetensors(path):
    """Read a safetensors file into a dict of name -> tensor."""
    st = _safetensors()
    with open(path, "rb") as fh:
        blob = fh.read()
    out = {}
    for name, info in st.deserialize(blob):
        dt = _ST_DTYPES.get(info["dtype"])
        if dt is None or dt.np is None:
            raise TypeError(f"load_safetensors: unsupported dtype {info['dtype']} for {name!r}")
        arr = np.frombuffer(info["data"], dt.np).reshape(info["shape"]).copy()
        out[name] = Tensor._make(arr, dt)
    return out
