"""The capture, guard, break and training tests again, on the C backend (fused kernels built
with the system compiler) instead of the numpy backend: one subprocess runs those files (and test_side_effects.py)
with EMBER_TEST_BACKEND=c and a fresh kernel cache, so every kernel is compiled here."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["test_capture.py", "test_capture_models.py", "test_training.py", "test_guards.py",
         "test_breaks.py", "test_side_effects.py", "test_graph_break_split.py",
         "test_recompiles.py"]


def test_compiler_suite_on_the_c_backend(tmp_path):
    # every group becomes a kernel, however small (by default tiny ones run op by op)
    # (and graph breaks split the small test functions, which the C backend by default
    # leaves eager: too little work per op to gain)
    env = dict(os.environ, EMBER_TEST_BACKEND="c", EMBER_CACHE_DIR=str(tmp_path / "cache"),
               EMBER_MIN_KERNEL_ELEMENTS="0", EMBER_SPLIT_MIN_ELEMENTS="0")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:warnings", "-x",
                        "-p", "no:randomly"] + [os.path.join(HERE, f) for f in FILES],
                       capture_output=True, text=True, env=env, cwd=os.path.dirname(HERE),
                       timeout=900)
    tail = "\n".join(r.stdout.splitlines()[-30:])
    assert r.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail, tail
    # the kernels were really built: the cache holds compiled libraries
    built = [f for _, _, fs in os.walk(tmp_path / "cache") for f in fs if f.endswith(".so")]
    assert built, "no kernel was compiled"
