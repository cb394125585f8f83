"""A differential fuzzer: awkward calls of every registered op, on torch and on ember, with
the same inputs, classified by how the two libraries answered.

Each case starts from one of the op's valid sample calls (tests/opinfo/samples.py) and applies
one mutation: NaN/inf values, another dtype, a mismatched or extra or zero-size dimension, a
dim argument out of range or of the wrong type, a non-tensor where a tensor goes, an unknown
keyword, a huge or negative integer. Both libraries run the call; the outcome is one of

    agree           same result (values, dtype, shape) or the same class of exception
    wrong_value     both returned, the results differ (a silently wrong value)
    accepted_bad    torch raised, ember returned something (bad input silently accepted)
    spurious_error  ember raised, torch returned
    error_class     both raised, with exception classes torch users tell apart
    crash           the ember process died or hung on the case

Cases run in a child process (`python tests/fuzz/fuzzer.py --seed S --share P`), which prints
one JSON line per case, so a crash or hang is reported with the case that caused it and the
run goes on after it. `run_cases` is the parent's side; tests/fuzz/test_fuzz.py and
`make fuzz` call it.
"""
import json
import os
import random
import select
import subprocess
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
OUTCOMES = ("agree", "wrong_value", "accepted_bad", "spurious_error", "error_class", "crash")
for _p in (str(TESTS / "opinfo"), str(TESTS)):   # _make, samples and _layouts live there
    if _p not in sys.path:
        sys.path.insert(0, _p)
HANG_S = 30          # a case still running after this is a hang

# mutations: name -> function(sample, rng) returning a mutated Sample, or None when it does
# not apply to this sample
DIM_KEYS = ("dim", "dim0", "dim1", "axis", "start_dim", "end_dim", "source", "destination")


def _tensors(obj, path=()):
    """(path, T) of every tensor description in the sample's args/kwargs."""
    from _make import T
    if isinstance(obj, T):
        return [(path, obj)]
    if isinstance(obj, (list, tuple)):
        return [r for k, x in enumerate(obj) for r in _tensors(x, path + (k,))]
    if isinstance(obj, dict):
        return [r for k, x in obj.items() for r in _tensors(x, path + (k,))]
    return []


def _put(obj, path, value):
    if not path:
        return value
    k, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {**obj, k: _put(obj[k], rest, value)}
    seq = list(obj)
    seq[k] = _put(seq[k], rest, value)
    return type(obj)(seq) if isinstance(obj, tuple) else seq


def _with_tensor(s, pick, change):
    """The sample with tensor number `pick` (of its tensors) replaced by change(T)."""
    ts = _tensors((s.args, s.kwargs))
    if not ts:
        return None
    path, t = ts[pick % len(ts)]
    new = change(t)
    if new is None:
        return None
    args, kwargs = _put((s.args, s.kwargs), path, new)
    return replace(s, args=tuple(args), kwargs=dict(kwargs))


def _ints(s):
    """Positions ("a", k) and keys ("k", name) of the sample's plain int arguments."""
    out = [("a", k) for k, a in enumerate(s.args) if type(a) is int]
    out += [("k", k) for k, v in s.kwargs.items() if type(v) is int]
    return out


def _with_int(s, rng, value, dims_only=False):
    spots = _ints(s)
    if dims_only:
        spots = [p for p in spots if p[0] == "a" or p[1] in DIM_KEYS]
    if not spots:
        return None
    kind, where = rng.choice(spots)
    if kind == "a":
        args = list(s.args)
        args[where] = value(args[where]) if callable(value) else value
        return replace(s, args=tuple(args))
    v = s.kwargs[where]
    return replace(s, kwargs={**s.kwargs, where: value(v) if callable(value) else value})


def _shape_change(f):
    return lambda t: (replace(t, shape=f(tuple(t.shape)), values=None, layout="C",
                              make=None)
                      if t.values is None and f(tuple(t.shape)) is not None else None)


MUTATIONS = {
    "specials": lambda s, r: _with_tensor(
        s, r.randrange(8), lambda t: replace(t, make="specials")
        if t.dtype.startswith("float") and t.make is None else None),
    "int64": lambda s, r: _with_tensor(
        s, r.randrange(8), lambda t: replace(t, dtype="int64") if t.dtype != "int64" else None),
    "bool": lambda s, r: _with_tensor(
        s, r.randrange(8), lambda t: replace(t, dtype="bool") if t.dtype != "bool" else None),
    "float64": lambda s, r: _with_tensor(
        s, r.randrange(8), lambda t: replace(t, dtype="float64")
        if t.dtype == "float32" else None),
    "last_dim_plus_one": lambda s, r: _with_tensor(
        s, r.randrange(8), _shape_change(lambda sh: sh[:-1] + (sh[-1] + 1,) if sh else None)),
    "extra_dim": lambda s, r: _with_tensor(
        s, r.randrange(8), _shape_change(lambda sh: (2,) + sh)),
    "zero_size": lambda s, r: _with_tensor(
        s, r.randrange(8), _shape_change(lambda sh: (0,) + sh[1:] if sh else None)),
    "dim_too_big": lambda s, r: _with_int(s, r, 7, dims_only=True),
    "dim_too_negative": lambda s, r: _with_int(s, r, -8, dims_only=True),
    "dim_float": lambda s, r: _with_int(s, r, lambda v: float(v), dims_only=True),
    "dim_bool": lambda s, r: _with_int(s, r, True, dims_only=True),
    "dim_none": lambda s, r: _with_int(s, r, None, dims_only=True),
    "dim_str": lambda s, r: _with_int(s, r, "x", dims_only=True),
    "int_huge": lambda s, r: _with_int(s, r, 2 ** 63),
    "int_negative": lambda s, r: _with_int(s, r, -1),
    "tensor_none": lambda s, r: _with_tensor(s, r.randrange(8), lambda t: None),
    "tensor_str": lambda s, r: _with_tensor(s, r.randrange(8), lambda t: "abc"),
    "tensor_list": lambda s, r: _with_tensor(s, r.randrange(8), lambda t: [1.0, 2.0]),
    "unknown_keyword": lambda s, r: replace(s, kwargs={**s.kwargs, "bogus": 1}),
}


# ---- the child: build and run cases ----
# (op, mutation) pairs that kill the oracle itself: the case cannot be compared
TORCH_CRASHES = {
    # torch 2.13's MKL geev segfaults on a float32 matrix holding NaN/inf (after printing
    # "Parameter 3 was incorrect on entry to SGEBAL"); ember returns NaN eigenvalues
    ("linalg_eigvals", "specials"),
}


# ops whose torch result on NaN/inf input is not defined: torch 2.13's Chebyshev kernels
# return uninitialized memory for NaN x and larger n (1.4e-45 on one call, 1.9e37 on the
# next; tests/fuzz/test_fuzz_fixes.py shows it): compared on shapes and dtypes there
TORCH_UNDEFINED_ON_SPECIALS = {f"special_{s}chebyshev_polynomial_{k}" for s in ("", "shifted_")
                               for k in "tuvw"}
# ops whose NaN/inf output is the implementation's choice, compared on shapes and dtypes
# there: an FFT of input holding inf has inf - inf = NaN at places that differ between FFT
# algorithms (pocketfft's butterflies in NumPy, torch's own plan), each a valid IEEE
# evaluation; how NaN spreads through an LU solve of a matrix holding inf is the LAPACK
# build's (torch's MKL fills the solution with NaN, OpenBLAS leaves some entries finite);
# torch 2.13's gelu at +inf is NaN in float32 and bfloat16 but inf in float64 (its
# vectorised erf kernel), so torch itself gives no one answer there
IMPLEMENTATION_DEFINED_ON_SPECIALS = {f"fft_{k}fft{n}" for k in ("", "i", "r", "ir", "h", "ih")
                                      for n in ("", "2", "n")} | {
    "stft", "istft", "linalg_tensorsolve", "gelu"}


def all_cases():
    """Every (op name, sample index, mutation name), in a fixed order."""
    from samples import samples_for
    from ember.ops.registry import OPS
    out = []
    for name in sorted(OPS):
        for i, _ in enumerate(samples_for(name)):
            out += [(name, i, m) for m in MUTATIONS if (name, m) not in TORCH_CRASHES]
    return out


def pick_cases(seed, share):
    """The cases of this seed: `share` percent of all, each kept or not by a hash of the
    seed and the case alone, so adding ops does not reshuffle the others. $EMBER_FUZZ_OPS
    (a comma list) keeps only those ops' cases (for working on one op)."""
    only = set(filter(None, os.environ.get("EMBER_FUZZ_OPS", "").split(",")))
    return [c for c in all_cases() if (not only or c[0] in only)
            and zlib.crc32(f"{seed}/{c[0]}/{c[1]}/{c[2]}".encode()) % 100 < share]


def _case_sample(name, i, mutation):
    from samples import samples_for
    s = samples_for(name)[i]
    rng = random.Random(zlib.crc32(f"{name}/{i}/{mutation}".encode()))
    return MUTATIONS[mutation](s, rng)


def _flat(r, lib):
    """A result as a flat list of comparable leaves: (dtype, shape, array) per tensor."""
    import numpy as np
    if isinstance(r, lib.Tensor):
        a = r.detach()
        if lib.__name__ == "torch":
            a = a.resolve_conj().resolve_neg()   # (a conj view: its values, as ember's)
            if a.dtype == lib.bfloat16:
                a = a.float()
        arr = np.asarray(a.numpy() if lib.__name__ == "torch" else a.numpy())
        return [("T", str(r.dtype).split(".")[-1], tuple(r.shape), arr)]
    if isinstance(r, (tuple, list)) and not type(r).__name__ == "Size":
        return [x for e in r for x in _flat(e, lib)]
    if type(r).__name__ == "Size":
        return [("size", tuple(r))]
    if type(r).__name__ in ("dtype", "Generator", "device"):
        return [(type(r).__name__, str(r).split(".")[-1])]
    return [("py", type(r).__name__, r)]


def _same(e, t, values):
    """None when ember's result `e` matches torch's `t`, else what differs."""
    import numpy as np
    if len(e) != len(t):
        return f"{len(e)} results, torch {len(t)}"
    for k, (x, y) in enumerate(zip(e, t)):
        if x[0] != y[0]:
            return f"result {k}: {x[0]} vs torch {y[0]}"
        if x[0] == "T":
            if x[1:3] != y[1:3]:
                return f"result {k}: {x[1]}{list(x[2])} vs torch {y[1]}{list(y[2])}"
            if values and x[3].size:
                a, b = x[3], y[3]
                if b.dtype.kind in "fc":
                    a = a.astype(np.float64)
                    b = b.astype(np.float64)
                    tol = 1e-3 if y[1] in ("float16", "bfloat16") else 1e-4
                    ok = np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
                else:
                    ok = np.array_equal(a, b)
                if not ok:
                    return f"result {k}: values differ"
        elif x[0] == "py":
            if x[1] != y[1]:
                return f"result {k}: {x[1]} vs torch {y[1]}"
            if values and x[2] != y[2] and not (x[2] != x[2] and y[2] != y[2]):
                return f"result {k}: {x[2]!r} vs torch {y[2]!r}"
        elif values and x != y:
            return f"result {k}: {x[1:]} vs torch {y[1:]}"
    return None


# the exception classes torch users tell apart (most specific first)
CLASSES = (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError)


def _class(exc):
    for c in CLASSES:
        if isinstance(exc, c):
            return c.__name__
    return type(exc).__name__


# results whose fields name a LAPACK factorisation: on NaN/inf input its values are
# whatever the library's LAPACK left there (torch's qr of a NaN matrix has finite entries)
FACTORS = {("Q", "R"), ("U", "S", "Vh"), ("U", "S", "V"), ("eigenvalues", "eigenvectors"),
           ("L", "U"), ("P", "L", "U"), ("LU", "pivots"), ("L", "info"), ("LD", "pivots"),
           ("a", "tau")}   # (geqrf: how NaN spreads, and a -0.0 pivot's sign, are the LAPACK
# build's choices: torch's and SciPy's differ)


def _defined_part(r, args, mutation, values):
    """(the part of result r that torch defines, whether to compare values). Where the
    input has equal elements, which of them topk/kthvalue/sort/mode report is the
    implementation's choice: a (values, indices) result is compared on its values only. A
    factorisation of NaN/inf input is compared on shapes and dtypes only."""
    import numpy as np
    fields = getattr(r, "_fields", None) or getattr(r, "__match_args__", None)  # (torch's)
    if not isinstance(r, tuple):
        return r, values
    if not fields:
        return r, values
    first = next((a for a in _leaves(args) if type(a).__name__ == "Tensor"), None)
    first = None if first is None else np.asarray(first.detach().float().numpy())
    if tuple(fields[:2]) == ("values", "indices") and first is not None and \
            np.unique(first).size < first.size:
        return r.values, values
    if mutation == "specials" and tuple(fields) in FACTORS:
        return r, False
    return r, values


def _leaves(obj):
    if isinstance(obj, (list, tuple)):
        return [x for e in obj for x in _leaves(e)]
    if isinstance(obj, dict):
        return [x for e in obj.values() for x in _leaves(e)]
    return [obj]


def run_one(name, i, mutation):
    """(outcome, detail) of one case; the caller guards against crashes."""
    import numpy as np
    import torch
    import ember
    from _make import realize, to_lib, call
    from _make import REFERENCE   # torch's call for ops it has under another name
    s = _case_sample(name, i, mutation)
    if s is None:
        return None
    try:
        arrs = realize((s.args, s.kwargs), np.random.default_rng(zlib.crc32(name.encode()) + i))
    except (ValueError, OverflowError, TypeError):
        return None        # the mutation does not fit the sample's explicit values
    res, values = {}, s.values
    if mutation == "specials" and name in TORCH_UNDEFINED_ON_SPECIALS | \
            IMPLEMENTATION_DEFINED_ON_SPECIALS:
        values = False
    for lib in (torch, ember):
        try:
            args, kwargs = to_lib(arrs, lib)
            r = call(name, s, args, kwargs, lib, REFERENCE.get(name))
        except Exception as exc:  # noqa: BLE001 - every exception is compared with torch's
            res[lib.__name__] = ("raise", exc)
            continue
        try:
            r, values = _defined_part(r, (args, kwargs), mutation, values)
            res[lib.__name__] = ("ok", _flat(s.post(r) if s.post else r, lib))
        except Exception as exc:  # noqa: BLE001
            if lib is torch:      # torch returned what it cannot read back itself (a size
                return None       # -8 dim of an empty expand): no oracle for the case
            res[lib.__name__] = ("raise", exc)
    (tk, tr), (ek, er) = res["torch"], res["ember"]
    if tk == "raise" and ek == "raise":
        if _class(er) == _class(tr):
            return "agree", "both raised"
        return "error_class", f"torch {_class(tr)}: {str(tr)[:120]} | ember {_class(er)}: {str(er)[:120]}"
    if tk == "raise":
        return "accepted_bad", f"torch {_class(tr)}: {str(tr)[:160]}"
    if ek == "raise":
        return "spurious_error", f"ember {_class(er)}: {str(er)[:160]}"
    diff = _same(er, tr, values)
    return ("agree", "") if diff is None else ("wrong_value", diff)


def child(seed, share, start):
    import warnings
    warnings.simplefilter("ignore")
    import torch
    torch.set_num_threads(1)
    import ember
    ember.set_num_threads(1)
    cases = pick_cases(seed, share)
    print(json.dumps({"total": len(cases)}), flush=True)
    for k in range(start, len(cases)):
        name, i, mutation = cases[k]
        print(json.dumps({"start": k}), flush=True)
        torch.manual_seed(k)
        ember.manual_seed(k)
        got = run_one(name, i, mutation)
        if got is None:       # the mutation does not apply: say so, or a last case like
            print(json.dumps({"skip": k}), flush=True)   # that would read as a crash
        else:
            print(json.dumps({"case": k, "op": name, "sample": i, "mutation": mutation,
                              "outcome": got[0], "detail": got[1]}), flush=True)


# ---- the parent: run the child, survive its crashes ----
def run_cases(seed, share=100, python=sys.executable):
    """Run the cases of `seed` (`share` percent of all) in child processes; returns the
    list of case records (dicts with op, sample, mutation, outcome, detail)."""
    records, start, total = [], 0, None
    while total is None or start < total:
        proc = subprocess.Popen([python, str(Path(__file__)), "--seed", str(seed), "--share",
                                 str(share), "--start", str(start)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                cwd=str(TESTS.parent), env={**os.environ, "OMP_NUM_THREADS": "1"})
        current, last = None, time.monotonic()
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                if not line.startswith("{"):
                    continue   # a C library writing to stdout (MKL's LAPACK on NaN input)
                msg = json.loads(line)
                if "total" in msg:
                    total = msg["total"]
                elif "start" in msg:
                    current, last = msg["start"], time.monotonic()
                elif "skip" in msg:
                    current = None
                else:
                    records.append(msg)
                    current = None
            elif time.monotonic() - last > HANG_S:
                proc.kill()
                break
        rc = proc.wait()
        if current is None:        # the child finished (or died between cases)
            if rc != 0 and total is None:
                raise RuntimeError(f"the fuzzer's child failed to start (exit {rc})")
            if total is None or rc == 0:
                break
            start = (records[-1]["case"] + 1) if records else start
            continue
        name, i, mutation = pick_cases(seed, share)[current]
        records.append({"case": current, "op": name, "sample": i, "mutation": mutation,
                        "outcome": "crash",
                        "detail": f"exit {rc}" if rc is not None and rc != -9 else "hang"})
        start = current + 1
    return records


def table(records):
    """{outcome: count}"""
    out = {o: 0 for o in OUTCOMES}
    for r in records:
        out[r["outcome"]] += 1
    return out


def prune_known(seen):
    """Rewrite known.py without the entries not in `seen` (never adds one: new divergences
    are written there by hand, with their reason)."""
    path = HERE / "known.py"
    lines, out, skip = path.read_text().split("\n"), [], 0
    for line in lines:
        if skip:
            skip -= 1
            continue
        if line.startswith("    (") and line.endswith("):"):
            key = eval(line.strip()[:-1])   # a tuple literal of strings, written by us
            only = set(filter(None, os.environ.get("EMBER_FUZZ_OPS", "").split(",")))
            if key not in seen and (not only or key[0] in only):
                print("fixed:", key)
                skip = 1
                continue
        out.append(line)
    path.write_text("\n".join(out))


def main(argv):
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--share", type=int, default=100, help="percent of all cases to run")
    p.add_argument("--start", type=int, default=None, help="(internal) run as the child")
    p.add_argument("--ops", default="", help="only these ops (comma list)")
    p.add_argument("--prune-known", action="store_true",
                   help="delete the entries of known.py that this run no longer finds")
    p.add_argument("--show", default="", help="print the cases of these outcomes (comma list)")
    a = p.parse_args(argv)
    if a.ops:
        os.environ["EMBER_FUZZ_OPS"] = a.ops      # (read by the children too)
    if a.start is not None:
        return child(a.seed, a.share, a.start)
    recs = run_cases(a.seed, a.share)
    if a.prune_known:
        prune_known({(r["op"], r["mutation"], r["outcome"]) for r in recs})
    show = set(filter(None, a.show.split(",")))
    for r in recs:
        if r["outcome"] in show:
            print(f"{r['outcome']:15} {r['op']}[{r['sample']}] {r['mutation']}: {r['detail']}")
    t = table(recs)
    print(" ".join(f"{k}={v}" for k, v in t.items()), f"cases={len(recs)}")
    both = sum(1 for r in recs if r["detail"] == "both raised") + t["error_class"]
    if both:
        print(f"exception class agreement: {1 - t['error_class'] / both:.1%} of {both} cases "
              f"where both raised")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
