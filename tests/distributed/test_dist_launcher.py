"""The launcher, python -m ember.distributed.run: torchrun's environment variables, script
arguments, -m modules, hostfiles, the exit status; and init_process_group's checks of
RANK/WORLD_SIZE against MPI. (Scripts given by path run in test_dist_faults.py.)"""
import json
import sys

import pytest

from _mpi import env_for_ranks, requires_mpi, run_command
from ember.distributed import run as launcher

MODULE = r'''
import json, os, sys
import ember, ember.distributed as dist

assert __name__ == "__main__"
rank = int(os.environ["RANK"])
# arguments that contradict MPI are refused
os.environ["WORLD_SIZE"] = "7"
try:
    dist.init_process_group("mpi")
    raise SystemExit("WORLD_SIZE=7 accepted")
except ValueError as e:
    assert "WORLD_SIZE" in str(e), e
os.environ["WORLD_SIZE"] = "2"
try:
    dist.init_process_group("mpi", rank=1 - rank)
    raise SystemExit("wrong rank accepted")
except ValueError as e:
    assert "rank" in str(e), e
assert not dist.is_initialized()
dist.init_process_group(init_method="env://")
t = ember.tensor([float(rank)])
dist.all_reduce(t)
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
        "MASTER_PORT")
print("ENV", json.dumps([dist.get_rank(), dist.get_world_size(),
                         {k: os.environ[k] for k in keys}, sys.argv[1:], t.item()]), flush=True)
dist.destroy_process_group()
'''


@requires_mpi
def test_module_over_hostfile(tmp_path):
    (tmp_path / "ember_launch_probe.py").write_text(MODULE)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# one machine, two slots\nlocalhost slots=2\n")
    env = env_for_ranks()
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    rc, out = run_command([sys.executable, "-m", "ember.distributed.run", "--nnodes", "1",
                           "--nproc-per-node", "2", "--hostfile", str(hostfile),
                           "--master-port", "29633", "-m", "ember_launch_probe", "--lr",
                           "0.5", "x"], timeout=90, env=env)
    lines = sorted(line for line in out.splitlines() if line.startswith("ENV"))
    assert len(lines) == 2, out
    for r, line in enumerate(lines):
        rank, size, env_vars, argv, total = json.loads(line[len("ENV "):])
        assert (rank, size) == (r, 2)
        assert env_vars["RANK"] == str(r) and env_vars["WORLD_SIZE"] == "2"
        assert env_vars["LOCAL_RANK"] == str(r) and env_vars["LOCAL_WORLD_SIZE"] == "2"
        assert env_vars["GROUP_RANK"] == "0" and env_vars["MASTER_ADDR"] == "localhost"
        assert env_vars["MASTER_PORT"] == "29633"
        assert argv == ["--lr", "0.5", "x"]
        assert total == 1.0


def test_command_for_several_nodes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))   # set: it must reach the other nodes
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-a slots=4\nnode-b slots=4\n")
    rc = launcher.main(["--nnodes", "2", "--nproc-per-node", "4", "--hostfile", str(hostfile),
                        "--dry-run", "train.py", "--epochs", "3"])
    cmd = capsys.readouterr().out.split()
    assert rc == 0
    assert cmd[0].endswith("mpiexec") and cmd[cmd.index("-n") + 1] == "8"
    assert cmd[cmd.index("--hostfile") + 1] == str(hostfile)
    assert cmd[cmd.index("--map-by") + 1] == "ppr:4:node"
    assert "MASTER_ADDR" in cmd and "PYTHONPATH" in cmd     # exported to the other nodes
    assert cmd[-4:] == ["ember.distributed._rank", "train.py", "--epochs", "3"]


def test_mpiexec_comes_from_the_venv():
    if launcher.mpiexec_path() is None:
        pytest.skip("no mpiexec")
    assert launcher.mpiexec_path().startswith(sys.prefix)


def test_arguments_and_exit_status_rules():
    with pytest.raises(SystemExit):
        launcher.parse_args(["--nnodes", "2", "train.py"])       # needs a hostfile
    with pytest.raises(SystemExit):
        launcher.parse_args(["--nproc-per-node", "0", "train.py"])
    a = launcher.parse_args(["--nproc_per_node", "3", "--standalone", "t.py", "-x", "--y"])
    assert a.nproc_per_node == 3 and a.script == "t.py" and a.script_args == ["-x", "--y"]
    # the script's own options pass through, even ones that look like the launcher's
    a = launcher.parse_args(["--nproc-per-node", "2", "-m", "pkg.mod", "--nproc", "2",
                             "--nproc-per-node", "5", "--help"])
    assert a.nproc_per_node == 2 and a.module and a.script == "pkg.mod"
    assert a.script_args == ["--nproc", "2", "--nproc-per-node", "5", "--help"]
    # a rank's failure wins; success needs every rank's word; remote ranks cannot say
    assert launcher.exit_status(0, 3, 2, 2, remote=False) == 3
    assert launcher.exit_status(0, 0, 2, 2, remote=False) == 0
    assert launcher.exit_status(0, 0, 1, 2, remote=False) == 1
    assert launcher.exit_status(0, 0, 0, 2, remote=True) == 0
