"""all_reduce bus bandwidth between 2 ranks: ember.distributed against raw mpi4py on NumPy.

    python -m benchmarks.distributed [--nproc 2] [--samples 9] [--max-mib 64] [--markdown]

For each float32 size from 1 KiB to 64 MiB, both ranks time `reps` back-to-back in-place
sums (reps chosen for ~20 ms per sample), alternating ember's
``dist.all_reduce(tensor)`` and mpi4py's ``comm.Allreduce(MPI.IN_PLACE, array)`` sample by
sample so load changes hit both; the figure is the median over samples of the slower
rank's time. Bus bandwidth follows nccl-tests: bytes / time x 2(n-1)/n (for 2 ranks,
the algorithm bandwidth). The launcher is the venv's mpiexec (``--oversubscribe``, each
rank single-threaded); the machine's load is printed beside the figures.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def sizes(max_mib):
    """1 KiB, 4 KiB, ... up to max_mib MiB (powers of 4), in bytes."""
    out, b = [], 1024
    while b <= max_mib * 1024 * 1024:
        out.append(b)
        b *= 4
    return out


def _rank_main(args):
    import numpy as np
    import ember
    import ember.distributed as dist
    dist.init_process_group("mpi")       # first: it sets ember's MPI defaults before MPI_Init
    from mpi4py import MPI
    comm = MPI.COMM_WORLD.Dup()          # raw mpi4py gets its own communicator
    n, me = comm.Get_size(), comm.Get_rank()

    def timed(fn, reps):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        dt = (time.perf_counter() - t0) / reps
        return comm.allreduce(dt, op=MPI.MAX)       # the slower rank's time

    rows = []
    for nbytes in sizes(args.max_mib):
        arr = np.ones(nbytes // 4, np.float32)
        t = ember.ones(nbytes // 4)

        def raw():
            comm.Allreduce(MPI.IN_PLACE, arr)

        def emb():
            dist.all_reduce(t)
        raw(), emb()
        one = timed(raw, 3)
        reps = comm.bcast(max(1, min(2000, int(0.02 / max(one, 1e-7)))), root=0)
        tr, te = [], []
        for s in range(args.samples):
            pair = [(raw, tr), (emb, te)] if s % 2 == 0 else [(emb, te), (raw, tr)]
            for fn, acc in pair:
                acc.append(timed(fn, reps))
        mr, mem = statistics.median(tr), statistics.median(te)
        factor = 2 * (n - 1) / n
        rows.append((nbytes, mem * 1e6, mr * 1e6, nbytes / mem * factor / 2**30,
                     nbytes / mr * factor / 2**30))
        arr[:] = 1
        t.fill_(1)
    if me == 0:
        for r in rows:
            print("ROW", *r, flush=True)
    dist.destroy_process_group()


def _human(nbytes):
    return f"{nbytes // 2**20} MiB" if nbytes >= 2**20 else f"{nbytes // 1024} KiB"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.distributed")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--samples", type=int, default=9)
    p.add_argument("--max-mib", type=int, default=64)
    p.add_argument("--markdown", action="store_true", help="print a BENCHMARKS.md table")
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank:
        return _rank_main(args)
    sys.path.insert(0, REPO)
    from ember.distributed._mpi import mpiexec_env, mpiexec_path
    from benchmarks.harness import cpu_busy, cpu_name
    env = mpiexec_env()
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = "1"
    busy = cpu_busy()
    cmd = [mpiexec_path(), "--oversubscribe", "-n", str(args.nproc), sys.executable, "-m",
           "benchmarks.distributed", "--rank", "--samples", str(args.samples),
           "--max-mib", str(args.max_mib)]
    out = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=1800)
    if out.returncode:
        sys.exit(f"benchmark ranks failed:\n{out.stdout}\n{out.stderr}")
    rows = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("ROW")]
    print(f"all_reduce float32, {args.nproc} ranks, {cpu_name()}, {os.cpu_count()} cores, "
          f"cpu busy before {busy:.0%}; medians of {args.samples} samples")
    if args.markdown:
        print("| size | ember (us) | mpi4py (us) | ember busbw (GiB/s) | mpi4py busbw (GiB/s) "
              "| ember/mpi4py |")
        print("|---|---|---|---|---|---|")
    for nb, te, tr, be, br in rows:
        nb = int(nb)
        te, tr, be, br = map(float, (te, tr, be, br))
        if args.markdown:
            print(f"| {_human(nb)} | {te:.1f} | {tr:.1f} | {be:.3f} | {br:.3f} | "
                  f"{be / br:.2f}x |")
        else:
            print(f"{_human(nb):>8s}  ember {te:10.1f} us {be:8.3f} GiB/s   mpi4py {tr:10.1f} "
                  f"us {br:8.3f} GiB/s   ember/mpi4py {be / br:5.2f}x")


if __name__ == "__main__":
    main()
