"""Recurrent layers: RNN (tanh/relu), LSTM (optional projection), GRU and their cells.

    lstm = nn.LSTM(10, 20, num_layers=2, bidirectional=True, batch_first=True)
    out, (h_n, c_n) = lstm(x)                 # x: (N, T, 10) -> out: (N, T, 40)

Parameter names, shapes, gate order and initialisation follow PyTorch (weight_ih_l0,
weight_hh_l0_reverse, bias_ih_l1, weight_hr_l0 ...; all U(-1/sqrt(hidden), 1/sqrt(hidden))).
The input projections of all time steps are one matmul; the recurrence loops over time with
one matmul per step for the whole batch. Packed sequences run on the padded batch with a
per-step mask: finished sequences keep their state (and output zeros).
"""
import math

from ...ops.creation import arange, zeros as _zeros
from ...ops.joining import cat, stack
from ...ops.pointwise import where
from ...ops.creation import empty
from .. import functional as F, init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, pad_packed_sequence
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(mode):
    """The recurrence of one step: f(xw_t, h, c, w_hh, b_hh, w_hr) -> (h, c); xw_t is the
    precomputed input projection (with b_ih)."""
    def rnn(xw, h, c, w_hh, b_hh, w_hr):
        z = xw + F.linear(h, w_hh, b_hh)
        return (z.tanh() if mode == "RNN_TANH" else z.relu()), None

    def lstm(xw, h, c, w_hh, b_hh, w_hr):
        i, f, g, o = (xw + F.linear(h, w_hh, b_hh)).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h if w_hr is None else F.linear(h, w_hr)), c

    def gru(xw, h, c, w_hh, b_hh, w_hr):
        xr, xz, xn = xw.chunk(3, -1)
        hr, hz, hn = F.linear(h, w_hh, b_hh).chunk(3, -1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        return (1 - z) * n + z * h, None
    return {"LSTM": lstm, "GRU": gru}.get(mode, rnn)


class RNNBase(Module):
    """Shared parameters and forward pass of RNN, LSTM and GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size or hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else real_hidden * dirs
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gate_size, in_size)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(empty(shape, dtype=dtype)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self):
        """No-op (there is no fused kernel whose weight layout could need flattening)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional
                                                                   else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def _layer_params(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return (get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr"))

    def _run_direction(self, x, h, c, params, mask, reverse):
        """One direction of one layer over (T, N, F) input; returns (out (T, N, H), h, c)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = params
        step = _rnn_step(self.mode)
        xw = F.linear(x, w_ih, b_ih)                     # all input projections at once
        steps = x.shape[0]
        outs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            h_new, c_new = step(xw[t], h, c, w_hh, b_hh, w_hr)
            if mask is not None:
                m = mask[t]
                h_new = where(m, h_new, h)
                if c_new is not None:
                    c_new = where(m, c_new, c)
                outs[t] = where(m, h_new, 0.0)
            else:
                outs[t] = h_new
            h, c = h_new, c_new
        return stack(outs, 0) if steps else x.new_zeros((0,) + tuple(h.shape)), h, c

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size or self.hidden_size
        mask = None
        if packed:
            sorted_idx, unsorted_idx = input.sorted_indices, input.unsorted_indices
            bs = input.batch_sizes
            raw = PackedSequence(input.data, bs)          # padded in sorted order
            x, lengths = pad_packed_sequence(raw)
            batched = True
            steps = x.shape[0]
            mask = (arange(steps).unsqueeze(1) < lengths.unsqueeze(0)).unsqueeze(-1)
        else:
            batched = input.dim() == 3
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                                 f"{input.dim()}D tensor instead")
            x = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                x = x.transpose(0, 1)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        n = x.shape[1]
        if hx is None:
            h0 = _zeros((self.num_layers * dirs, n, real_hidden), dtype=x.dtype)
            c0 = (_zeros((self.num_layers * dirs, n, self.hidden_size), dtype=x.dtype)
                  if is_lstm else None)
        else:
            h0, c0 = hx if is_lstm else (hx, None)
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if packed and sorted_idx is not None:
                h0 = h0.index_select(1, sorted_idx)
                c0 = c0.index_select(1, sorted_idx) if c0 is not None else None
            want = (self.num_layers * dirs, n, real_hidden)
            if tuple(h0.shape) != want:
                raise RuntimeError(f"Expected hidden size {want}, got {list(h0.shape)}")
            if c0 is not None and tuple(c0.shape) != want[:2] + (self.hidden_size,):
                raise RuntimeError(f"Expected hidden[1] size "
                                   f"{want[:2] + (self.hidden_size,)}, got {list(c0.shape)}")
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                out, h, c = self._run_direction(x, h0[k], c0[k] if c0 is not None else None,
                                                self._layer_params(layer, d), mask, d == 1)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if dirs == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = stack(hs, 0)
        c_n = stack(cs, 0) if is_lstm else None
        if packed:
            bsz = input.batch_sizes.numpy()
            data = cat([x[t, :int(b)] for t, b in enumerate(bsz)], 0)
            output = PackedSequence(data, input.batch_sizes, sorted_idx, unsorted_idx)
            if unsorted_idx is not None:
                h_n = h_n.index_select(1, unsorted_idx)
                c_n = c_n.index_select(1, unsorted_idx) if c_n is not None else None
        else:
            output = x
            if not batched:
                output, h_n = output.squeeze(1), h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return output, ((h_n, c_n) if is_lstm else h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` (or relu)."""

    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """LSTM with gates (i, f, g, o); `proj_size` > 0 projects h with weight_hr."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU with gates (r, z, n)."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _prep(self, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size}")
        zeros = _zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
        if hx is None:
            return x, None, zeros, batched
        return x, hx, zeros, batched

    def _step(self, mode, x, h, c):
        xw = F.linear(x, self.weight_ih, self.bias_ih)
        return _rnn_step(mode)(xw, h, c, self.weight_hh, self.bias_hh, None)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One step of an Elman RNN."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, hx, zeros, batched = self._prep(input, hx)
        h = zeros if hx is None else (hx if batched else hx.unsqueeze(0))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h, _ = self._step(mode, x, h, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h, c)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, hx, zeros, batched = self._prep(input, hx)
        if hx is None:
            h, c = zeros, zeros
        else:
            h, c = hx if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = self._step("LSTM", x, h, c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, hx, zeros, batched = self._prep(input, hx)
        h = zeros if hx is None else (hx if batched else hx.unsqueeze(0))
        h, _ = self._step("GRU", x, h, None)
        return h if batched else h.squeeze(0)
