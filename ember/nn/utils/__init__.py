"""nn.utils: gradient clipping and parameter <-> vector conversion."""
from . import clip_grad, convert_parameters  # noqa: F401
from .clip_grad import (clip_grad_norm_, clip_grad_norm, clip_grad_value_,  # noqa: F401
                        get_total_norm, clip_grads_with_norm_)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import rnn  # noqa: F401,E402
from .rnn import (PackedSequence, pack_padded_sequence, pad_packed_sequence,  # noqa: F401,E402
                  pad_sequence, pack_sequence, unpad_sequence, unpack_sequence)
