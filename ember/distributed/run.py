"""The launcher (torchrun's role) over the environment's `mpiexec`.

    python -m ember.distributed.run --nproc-per-node 2 train.py --lr 0.1
    python -m ember.distributed.run --nnodes 2 --nproc-per-node 4 --hostfile hosts train.py

starts N x M copies of the script through Open MPI's mpiexec (from the venv; a hostfile
line reads ``node1 slots=4``). Each copy gets torchrun's environment variables — RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT — set from
MPI's placement, then runs the script as ``__main__`` (``-m`` runs a module).

Faults: plain mpiexec kills the whole job the moment one rank dies or exits with an
error, so the other ranks never learn why. The launcher instead asks Open MPI's runtime to
keep the other ranks running (``--runtime-options recoverable,continuous,
error-nonzero-status=false``): each surviving rank then raises ember.distributed's
RuntimeError naming the collective and the missing rank — within half a second when the
failing rank's script raised (it announces its exit, see _rank.py), else when the group's
timeout expires (work.py) — and exits. The launcher's exit status is the first non-zero exit status a rank
recorded (or non-zero if a rank died without recording one), since mpiexec's own status
cannot say it under those settings. ``--no-fault-tolerance`` gives plain mpiexec.
(Open MPI's ULFM, ``--with-ft ulfm``, reports a killed rank sooner, but its MPI_Finalize
can hang when a peer exited without finalizing; pass it with --mpi-arg to try it.)
"""
import argparse
import os
import shlex
import socket
import subprocess
import sys
import tempfile

from ._mpi import IALLREDUCE_ALGORITHM, mpiexec_env, mpiexec_path

FT_ARGS = ["--runtime-options", "recoverable,continuous,error-nonzero-status=false"]
EXPORTED = ("PYTHONPATH", "PATH", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
            "EMBER_RANK_STATUS_DIR")
EXPORTED_PREFIXES = ("TORCH_", "EMBER_")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run", allow_abbrev=False,
        description="Run a script on several processes (and machines) over MPI, with "
                    "torchrun's environment variables.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="processes per node (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes (default 1)")
    p.add_argument("--hostfile", default=None,
                   help="Open MPI hostfile ('host slots=N' lines); needed for --nnodes > 1")
    p.add_argument("--master-addr", "--master_addr", default=None,
                   help="MASTER_ADDR (default: the first node's host name)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="accepted for torchrun "
                   "compatibility (one node, nothing to do)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="run the script as an executable, not with Python")
    p.add_argument("--no-fault-tolerance", action="store_true",
                   help="plain mpiexec: the job is killed as soon as any rank fails")
    p.add_argument("--mpi-arg", action="append", default=[],
                   help="one extra argument for mpiexec (repeatable), e.g. --mpi-arg=--bind-to "
                        "--mpi-arg=none")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command only")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nproc_per_node < 1 or args.nnodes < 1:
        p.error("--nproc-per-node and --nnodes must be positive")
    if args.nnodes > 1 and args.hostfile is None:
        p.error("--nnodes > 1 needs --hostfile (the machines to run on)")
    return args


def _first_host(hostfile):
    with open(hostfile) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                return line.split()[0]
    raise SystemExit(f"hostfile {hostfile} lists no hosts")


def build_command(args, status_dir):
    """(mpiexec command line, environment) for the parsed arguments."""
    n = args.nproc_per_node * args.nnodes
    cmd = [mpiexec_path(), "-n", str(n), "--oversubscribe"]
    if args.hostfile:
        cmd += ["--hostfile", args.hostfile, "--map-by", f"ppr:{args.nproc_per_node}:node"]
    if not args.no_fault_tolerance:
        cmd += FT_ARGS
    cmd += list(args.mpi_arg)
    env = mpiexec_env()
    env.setdefault("OMPI_MCA_coll_libnbc_iallreduce_algorithm", IALLREDUCE_ALGORITHM)
    env["MASTER_ADDR"] = args.master_addr or (
        _first_host(args.hostfile) if args.hostfile else socket.gethostname())
    env["MASTER_PORT"] = str(args.master_port)
    env["EMBER_LOCAL_WORLD_SIZE"] = str(args.nproc_per_node)
    env["EMBER_RANK_STATUS_DIR"] = status_dir
    for name in sorted(env):
        if name in EXPORTED or name.startswith(EXPORTED_PREFIXES):
            cmd += ["-x", name]
    if args.no_python:
        target = [args.script]
    else:
        target = [sys.executable, "-m", "ember.distributed._rank"]
        target += ["-m", args.script] if args.module else [args.script]
    return cmd + target + list(args.script_args), env


def _rank_status(status_dir, n):
    """(the earliest non-zero exit status the ranks recorded, or 0; how many recorded)."""
    first, written = (0, float("inf")), 0
    for r in range(n):
        try:
            with open(os.path.join(status_dir, f"rank{r}")) as f:
                code, when = f.read().split()
            code, when = int(code), float(when)
        except (OSError, ValueError):
            continue
        written += 1
        if code and when < first[1]:
            first = (code, when)
    return first[0], written


def exit_status(mpiexec_rc, worst, written, n, remote):
    """The launcher's exit status: a rank's failure, else success only if every rank said
    so (ranks on other machines cannot: then mpiexec's status is all there is)."""
    if worst:
        return worst
    if written == n:
        return 0
    if remote:
        return mpiexec_rc
    return mpiexec_rc or 1      # a rank died before it could record a status


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="ember-run-") as status_dir:
        cmd, env = build_command(args, status_dir)
        if args.dry_run:
            print(" ".join(shlex.quote(c) for c in cmd))
            return 0
        rc = subprocess.call(cmd, env=env)
        n = args.nproc_per_node * args.nnodes
        worst, written = _rank_status(status_dir, n)
    if args.no_python:
        return rc
    return exit_status(rc, worst, written, n, remote=args.hostfile is not None)


if __name__ == "__main__":
    sys.exit(main())
