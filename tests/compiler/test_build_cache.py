"""The kernel builder's caches (ember/compiler/build.py): memory memo, disk cache hit in a fresh
process (no C compilation), corrupt/truncated entries detected and rebuilt, two processes
building the same new kernel at once, missing compiler / bad source errors, EMBER_LOGS."""
import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember.compiler import build, config
from ember.compiler.kernel import Input, Kernel, Output, Reduction

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# a child process: builds the kernel with the given constant, prints stats and a result
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from ember.compiler import build
    from ember.compiler.kernel import Input, Kernel, Output, Reduction
    c = float(sys.argv[1])
    x = ("load", 0)
    k = Kernel((Input("float64", "any", "one"),),
               (Reduction("sum", ("call", "exp", "float64", x), "float64"),),
               (Output(("call", "add", "float64", x, ("const", c, "float64")), "float64"),
                Output(("row", 0), "float64", per_row=True)))
    fn = build.load_kernel(k)
    a = np.arange(12.0).reshape(3, 4) / 10
    out, row = np.empty((3, 4)), np.empty(3)
    fn(3, 4, [a], [4, 1], [out, row])
    ok = np.allclose(out, a + c) and np.allclose(row, np.exp(a).sum(1))
    print(json.dumps({"stats": build.stats, "ok": bool(ok)}))
""")


def child_kernel(c):
    x = ("load", 0)
    return Kernel((Input("float64", "any", "one"),),
                  (Reduction("sum", ("call", "exp", "float64", x), "float64"),),
                  (Output(("call", "add", "float64", x, ("const", c, "float64")), "float64"),
                   Output(("row", 0), "float64", per_row=True)))


def spawn(cache_dir, c):
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache_dir),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", CHILD, repr(c)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    build.clear_memory()
    yield tmp_path
    build.clear_memory()


def so_files(cache_dir):
    return sorted(p for p in (cache_dir / "kernels").glob("*/*.so"))


def test_second_process_does_no_compilation(cache):
    first = result(spawn(cache, 1.5))
    assert first["ok"] and first["stats"]["compiled"] == 1 and first["stats"]["disk_hits"] == 0
    second = result(spawn(cache, 1.5))
    assert second["ok"] and second["stats"]["compiled"] == 0
    assert second["stats"]["disk_hits"] == 1
    assert len(so_files(cache)) == 1
    so = so_files(cache)[0]
    # layout: kernels/<first 2 hex>/<sha256>.so, its hash sidecar and the source beside it
    assert so.parent.name == so.stem[:2] and len(so.stem) == 64
    assert (so.parent / (so.stem + ".c")).read_text().count("em_exp(") >= 1
    # and in this process: disk hit, then memory hit
    k = child_kernel(1.5)
    before = dict(build.stats)
    build.load_kernel(k)
    build.load_kernel(k)
    assert build.stats["compiled"] == before["compiled"]
    assert build.stats["disk_hits"] == before["disk_hits"] + 1
    assert build.stats["memory_hits"] == before["memory_hits"] + 1


def _check(fn, c):
    a = np.arange(12.0).reshape(3, 4) / 10
    out, row = np.empty((3, 4)), np.empty(3)
    fn(3, 4, [a], [4, 1], [out, row])
    np.testing.assert_allclose(out, a + c)
    np.testing.assert_allclose(row, np.exp(a).sum(1))


@pytest.mark.parametrize("damage", ["truncate", "garbage_same_hash", "no_sidecar"])
def test_corrupt_entry_is_detected_and_rebuilt(cache, damage):
    # built by another process (this one must not have the library mapped: overwriting a
    # loaded library's file would crash it, which is why the builder only ever os.replaces)
    assert result(spawn(cache, 2.5))["stats"]["compiled"] == 1
    k = child_kernel(2.5)
    so = so_files(cache)[0]
    damaged = so.parent / "damaged"
    if damage == "truncate":
        damaged.write_bytes(so.read_bytes()[: so.stat().st_size // 3])
        os.replace(damaged, so)
    elif damage == "garbage_same_hash":        # passes the hash check, fails dlopen
        import hashlib
        damaged.write_bytes(b"\x7fELF not really a library")
        os.replace(damaged, so)
        (so.parent / (so.name + ".sha256")).write_text(hashlib.sha256(so.read_bytes())
                                                       .hexdigest())
    else:
        os.unlink(str(so) + ".sha256")
    compiled = build.stats["compiled"]
    fn = build.load_kernel(k)
    assert build.stats["compiled"] == compiled + 1
    _check(fn, 2.5)
    assert build._valid(str(so))


def test_two_processes_build_the_same_new_kernel_at_once(cache):
    procs = [spawn(cache, 3.25) for _ in range(2)]
    results = [result(p) for p in procs]
    assert all(r["ok"] for r in results)
    # the lock lets exactly one of them compile; the other finds the finished library
    assert sum(r["stats"]["compiled"] for r in results) == 1
    assert sum(r["stats"]["disk_hits"] for r in results) == 1
    assert len(so_files(cache)) == 1
    leftovers = [p.name for p in (cache / "kernels").glob("*/.tmp*")]
    assert leftovers == []


def test_many_kernels_one_library_and_distinct_constants(cache):
    ks = [child_kernel(float(c)) for c in range(4)]
    compiled = build.stats["compiled"]
    fns = build.load_kernels(ks + ks[:2])
    assert build.stats["compiled"] == compiled + 1         # one compiler call for all four
    assert len(so_files(cache)) == 1
    for c, fn in enumerate(fns[:4]):
        _check(fn, float(c))
    assert fns[4] is fns[0]
    assert build.load_kernel(ks[3]) is fns[3]               # memoised by kernel


def test_missing_compiler_raises_compiler_unavailable(cache, monkeypatch):
    monkeypatch.setattr(config, "cc", "/nonexistent/ember-cc")
    with pytest.raises(build.CompilerUnavailable, match="not found"):
        build.load_kernel(child_kernel(9.75))


def test_compile_error_is_reported(cache):
    with pytest.raises(build.CompileError, match="failed"):
        build.build_library("this is not C;")
    assert list((cache / "kernels").glob("*/.tmp*")) == []


def test_cache_key_covers_source_flags_and_cpu():
    a = build.cache_key("int x;")
    assert a == build.cache_key("int x;")
    assert a != build.cache_key("int y;")
    assert a != build.cache_key("int x;", build.FLAGS + ("-DX",))
    old = build._CPU_FLAGS
    try:
        build._CPU_FLAGS = old + " newfeature"
        assert a != build.cache_key("int x;")
    finally:
        build._CPU_FLAGS = old


def test_ember_logs_cache_and_code(cache, monkeypatch, caplog):
    monkeypatch.setenv("EMBER_LOGS", "cache,code")
    with caplog.at_level(logging.DEBUG, logger="ember.compiler"):
        build.load_kernel(child_kernel(4.5))
    text = caplog.text
    assert "kernel cache miss, compiled" in text
    assert "generated C" in text and "void ember_kernel" in text
    caplog.clear()
    build.clear_memory()
    with caplog.at_level(logging.DEBUG, logger="ember.compiler"):
        build.load_kernel(child_kernel(4.5))
    assert "kernel cache hit" in caplog.text


def test_reduction_kernel_without_logs_is_quiet(cache, monkeypatch, capfd):
    monkeypatch.delenv("EMBER_LOGS", raising=False)
    k = Kernel((Input("float32", "any", "one"),), (Reduction("sum", ("load", 0), "float32"),),
               (Output(("row", 0), "float32", per_row=True),))
    fn = build.load_kernel(k)
    x = np.ones((2, 5), np.float32)
    out = np.empty(2, np.float32)
    fn(2, 5, [x], [5, 1], [out])
    assert (out == 5).all()
    assert capfd.readouterr().err == ""
