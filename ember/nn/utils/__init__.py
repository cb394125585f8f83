"""nn.utils: gradient clipping, parameter <-> vector conversion, packed sequences,
parametrizations (parametrize, parametrizations), pruning, weight/spectral norm, conv+bn
fusion, stateless calls and conv weight memory formats."""
from . import clip_grad, convert_parameters  # noqa: F401
from .clip_grad import (clip_grad_norm_, clip_grad_norm, clip_grad_value_,  # noqa: F401
                        get_total_norm, clip_grads_with_norm_)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import rnn  # noqa: F401,E402
from .rnn import (PackedSequence, pack_padded_sequence, pad_packed_sequence,  # noqa: F401,E402
                  pad_sequence, pack_sequence, unpad_sequence, unpack_sequence)
from . import parametrize, parametrizations, prune, stateless, fusion  # noqa: F401,E402
from . import memory_format  # noqa: F401,E402
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa
                     fuse_linear_bn_weights)
from .memory_format import (convert_conv2d_weight_memory_format,  # noqa: F401,E402
                            convert_conv3d_weight_memory_format, skip_init)
# as in torch, nn.utils.weight_norm / spectral_norm name the functions, not their modules
from .weight_norm import weight_norm, remove_weight_norm  # noqa: F401,E402
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: F401,E402
