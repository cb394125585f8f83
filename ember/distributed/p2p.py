"""Point-to-point messages: send/recv, isend/irecv, batch_isend_irecv (torch's names).

Ranks are global ranks (`dst`, `src`) or ranks in the group (`group_dst`, `group_src`).
The MPI buffers are the tensors' arrays; the receive lands in place. Like every ember
collective, a blocking send/recv waits at most the group's timeout (see work.py).

    if dist.get_rank() == 0:
        dist.send(t, dst=1)
    else:
        dist.recv(t, src=0)
"""
from ..core.tensor import Tensor
from . import _mpi
from .collectives import _group, _move, _readable, _root, _tensor, _writable
from .work import Work


def _peer(pg, glob, grp, what):
    r = _root(pg, glob, grp, what)
    if r == pg.rank():
        kind = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {kind} rank: should not be the same as the rank of the "
                         "current process.")
    return r


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank `dst` without blocking; returns a Work."""
    arr = _tensor(tensor, "tensor")
    pg = _group(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    buf = _readable(arr)
    req = pg.comm.Isend(_move(buf), dest=peer, tag=tag)
    w = Work(pg, f"isend to rank {pg.ranks[peer]}", [req], result=[tensor])
    w._keep = buf          # the send buffer stays alive until the send completes
    return w


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank `src` (None: any rank) without blocking."""
    _tensor(tensor, "tensor")
    pg = _group(group, "irecv")
    if pg is None:
        return None
    MPI = _mpi.mpi()
    if src is None and group_src is None:
        peer = MPI.ANY_SOURCE
        who = "any rank"
    else:
        peer = _peer(pg, src, group_src, "src")
        who = f"rank {pg.ranks[peer]}"
    buf, back = _writable(tensor)
    status = MPI.Status()
    req = pg.comm.Irecv(_move(buf), source=peer, tag=tag)
    w = Work(pg, f"irecv from {who}", [req], result=[tensor])

    def finish():
        back()
        w._source = pg.ranks[peer] if peer != MPI.ANY_SOURCE else pg.ranks[status.Get_source()]

    def test():   # Test with a status, to learn the sender of an any-source receive
        try:
            return req.Test(status)
        except MPI.Exception as e:
            raise w._mpi_error(e) from None
    w._finish = finish
    w._test = test
    return w


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank `dst`; returns when the send buffer may be reused."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank `src` (None: any); returns the sender's rank."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    return w._source


class P2POp:
    """One send or receive for batch_isend_irecv: ``P2POp(dist.isend, t, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch."
                             "distributed.isend`` or ``torch.distributed.irecv``.")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Invalid function argument. Expected parameter `tensor` of type "
                            f"torch.Tensor but got {type(tensor)} instead.")
        self.op, self.tensor, self.peer = op, tensor, peer
        self.group, self.tag, self.group_peer = group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Post every send and receive of the list; returns their Works."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works
