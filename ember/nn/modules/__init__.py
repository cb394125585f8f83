"""The layer classes of ember.nn (one file per family, as in PyTorch)."""
from .module import Module  # noqa: F401
from .container import (Sequential, ModuleList, ModuleDict, ParameterList,  # noqa: F401
                        ParameterDict)
from .linear import Identity, Linear, Bilinear, LazyLinear  # noqa: F401
from .activation import (ReLU, ReLU6, LeakyReLU, PReLU, ELU, SELU, CELU, GELU,  # noqa: F401
                         SiLU, Mish, Softplus, Softsign, Hardtanh, Hardswish, Hardsigmoid,
                         Tanh, Sigmoid, LogSigmoid, Softmax, LogSoftmax, Softmin, Threshold,
                         GLU, Tanhshrink, Softshrink, Hardshrink)
from .dropout import (Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout,  # noqa: F401
                      FeatureAlphaDropout)
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .sync_batchnorm import SyncBatchNorm  # noqa: F401
from .normalization import (LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm,  # noqa: F401
                            InstanceNorm1d, InstanceNorm2d, InstanceNorm3d)
from .loss import (L1Loss, MSELoss, NLLLoss, CrossEntropyLoss, BCELoss,  # noqa: F401
                   BCEWithLogitsLoss, SmoothL1Loss, HuberLoss, KLDivLoss, PoissonNLLLoss,
                   GaussianNLLLoss, CosineEmbeddingLoss, MarginRankingLoss,
                   HingeEmbeddingLoss, TripletMarginLoss, MultiMarginLoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, SoftMarginLoss, CTCLoss)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .activation_attention import MultiheadAttention  # noqa: F401
from .transformer import (TransformerEncoderLayer, TransformerEncoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerDecoder, Transformer)
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,  # noqa: F401
                   ConvTranspose3d)
from .pooling import (MaxPool1d, MaxPool2d, MaxPool3d, AvgPool1d, AvgPool2d,  # noqa: F401
                      AvgPool3d, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d,
                      AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, MaxUnpool1d,
                      MaxUnpool2d)
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d  # noqa: F401
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d,  # noqa: F401
                      ZeroPad2d, ZeroPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d,
                      ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, CircularPad1d,
                      CircularPad2d, CircularPad3d)
from .pooling_extra import (LPPool1d, LPPool2d, LPPool3d, FractionalMaxPool2d,  # noqa: F401
                            FractionalMaxPool3d, MaxUnpool3d)
from .misc import (Softmax2d, RReLU, ChannelShuffle, CosineSimilarity,  # noqa: F401
                   PairwiseDistance, TripletMarginWithDistanceLoss, NLLLoss2d, CrossMapLRN2d,
                   Container)
from .lazy import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,  # noqa: F401
                   LazyConvTranspose2d, LazyConvTranspose3d, LazyBatchNorm1d, LazyBatchNorm2d,
                   LazyBatchNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,
                   UninitializedBuffer)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .data_parallel import DataParallel  # noqa: F401
from .linear_cross_entropy import LinearCrossEntropyLoss  # noqa: F401
from ..linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401
from .misc import factory_kwargs  # noqa: F401
