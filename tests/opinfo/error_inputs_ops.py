"""The ops' own error inputs (the generic ones are in error_inputs.py): views and shapes,
joining, the matmul family, indexing, gather and scatter, creation and random ops (linear
algebra, fft and the nn functions: error_inputs_nn.py). ERRORS gathers them all.

Each ERRORS row maps an op's registered name to its `ErrorInput`s, written with `E(what, exc,
regex, *args, **kwargs)` (called as the public function) or `Em(...)` (as a Tensor method);
arguments are T, I, B, L descriptions as in the samples. NO_GENERIC names generic error
inputs that do not apply to an op, with the reason.
"""
try:
    from ._make import E, Em, I, L, T
    from .error_inputs_nn import FFT, LINALG, NN
    from .error_inputs_misc import MISC
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import E, Em, I, L, T
    from error_inputs_nn import FFT, LINALG, NN
    from error_inputs_misc import MISC


x23, x34, x234, x3 = T((2, 3)), T((3, 4)), T((2, 3, 4)), T((3,))
i64 = L(lambda lib: lib.int64)
RE, IE, TE, VE, NIE = RuntimeError, IndexError, TypeError, ValueError, NotImplementedError

VIEWS = {
    "view": [Em("bad numel", RE, r"shape '\[5\]' is invalid for input of size 6", x23, 5),
             Em("two -1", RE, r"only one dimension can be inferred", x23, -1, -1),
             Em("strides", RE, r"view size is not compatible with input tensor's size and "
                r"stride", T((2, 3), "float32", "T"), 6),
             Em("negative size", RE, r"invalid shape dimension -2", x23, -2, -3)],
    "reshape": [E("bad numel", RE, r"shape '\[4, 2\]' is invalid for input of size 6", x23,
                  (4, 2)),
                E("two -1", RE, r"only one dimension can be inferred", x23, (-1, -1)),
                E("-1 with 0", RE, r"cannot reshape tensor of 0 elements into shape "
                  r"\[-1, 0\]", T((0, 3)), (-1, 0))],
    "view_as": [Em("bad numel", RE, r"shape '\[4\]' is invalid for input of size 6", x23,
                   T((4,)))],
    "reshape_as": [Em("bad numel", RE, r"shape '\[5\]' is invalid for input of size 6", x23,
                      T((5,)))],
    "flatten": [E("start > end", RE, r"flatten\(\) has invalid args: start_dim cannot come "
                  r"after end_dim", x234, 2, 1),
                E("dim out of range", IE, r"Dimension out of range", x234, 0, 3)],
    "unflatten": [E("bad sizes", RE, r"unflatten: Provided sizes \[4, 2\] don't multiply up "
                    r"to the size of dim 1 \(6\) in the input tensor", T((2, 6)), 1, (4, 2)),
                  E("empty sizes", RE, r"unflatten: sizes must be non-empty", T((2, 6)), 1,
                    ())],
    "transpose": [E("dim out of range", IE, r"Dimension out of range", x23, 0, 2),
                  E("float dim", TE, r"must be int, not float", x23, 0, 1.5)],
    "t": [E("3-D input", RE, r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D",
            x234)],
    "permute": [E("too few dims", RE, r"permute\(sparse_coo\): number of dimensions in the "
                  r"tensor input does not match the length of the desired ordering of "
                  r"dimensions|number of dims don't match in permute", x234, (1, 0)),
                E("repeated dim", RE, r"permute\(\): duplicate dims are not allowed\.", x234,
                  (0, 0, 1)),
                E("dim out of range", IE, r"Dimension out of range", x23, (0, 2))],
    "movedim": [E("repeated dim", RE, r"movedim: repeated dim in `source` \(\[0, 0\]\)", x234,
                  (0, 0), (1, 2)),
                E("length mismatch", RE, r"movedim: Invalid source or destination dims: "
                  r"source \(\[0, 1\] dims\) should contain the same number of dims as "
                  r"destination \(\[2\] dims\)", x234, (0, 1), (2,)),
                E("dim out of range", IE, r"Dimension out of range", x23, 0, 2)],
    "moveaxis": [E("dim out of range", IE, r"Dimension out of range", x23, 2, 0)],
    "swapaxes": [E("dim out of range", IE, r"Dimension out of range", x23, 0, 2)],
    "swapdims": [E("dim out of range", IE, r"Dimension out of range", x23, 3, 0)],
    "squeeze": [E("dim out of range", IE, r"Dimension out of range", T((2, 1)), 2)],
    "unsqueeze": [E("dim out of range", IE, r"Dimension out of range \(expected to be in "
                    r"range of \[-3, 2\], but got 3\)", x23, 3)],
    "expand": [Em("bad size", RE, r"The expanded size of the tensor \(4\) must match the "
                  r"existing size \(3\) at non-singleton dimension 1\.  Target sizes: \[2, "
                  r"4\]\.  Tensor sizes: \[2, 3\]", x23, 2, 4),
               Em("too few sizes", RE, r"the number of sizes provided \(1\) must be greater "
                  r"or equal to the number of dimensions in the tensor \(2\)", x23, 3),
               Em("-1 on a new dim", RE, r"The expanded size of the tensor \(-1\) isn't "
                  r"allowed in a leading, non-existing dimension 0", x23, -1, 2, 3)],
    "expand_as": [Em("bad size", RE, r"The expanded size of the tensor \(4\) must match the "
                     r"existing size \(3\)", x23, T((2, 4)))],
    "broadcast_to": [E("bad size", RE, r"The expanded size of the tensor \(4\) must match "
                       r"the existing size \(3\)", x23, (2, 4))],
    "narrow": [E("past the end", RE, r"start \(2\) \+ length \(3\) exceeds dimension size "
                 r"\(4\)\.", x34, 1, 2, 3),
               E("negative length", RE, r"narrow\(\): length must be non-negative\.", x34, 1,
                 0, -1),
               E("start out of range", IE, r"start out of range \(expected to be in range of "
                 r"\[-4, 4\], but got 5\)", x34, 1, 5, 0),
               E("0-dim input", RE, r"narrow\(\) cannot be applied to a 0-dim tensor\.",
                 T(()), 0, 0, 1)],
    "select": [E("index out of range", IE, r"select\(\): index 3 out of range for tensor of "
                 r"size \[3, 4\] at dimension 0", x34, 0, 3),
               E("negative index", IE, r"select\(\): index -5 out of range for tensor of "
                 r"size \[3, 4\] at dimension 1", x34, 1, -5),
               E("0-dim input", IE, r"select\(\) cannot be applied to a 0-dim tensor\.",
                 T(()), 0, 0)],
    "unbind": [E("0-dim input", IE, r"Dimension specified as 0 but tensor has no dimensions",
                 T(()))],
    "split": [E("zero split size", RE, r"split_size can only be 0 if dimension size is 0, but "
                r"got dimension size of 3", x23, 0, 1),
              E("sizes don't sum", RE, r"split_with_sizes expects split_sizes to sum exactly "
                r"to 3 \(input tensor's size at dimension 1\), but got split_sizes=\[1, 1\]",
                x23, [1, 1], 1)],
    "split_with_sizes": [E("sizes don't sum", RE, r"split_with_sizes expects split_sizes to "
                           r"sum exactly to 3", x23, [2, 2], 1),
                         E("negative size", RE, r"split_with_sizes expects split_sizes have "
                           r"only non-negative entries, but got split_sizes=\[-1, 4\]", x23,
                           [-1, 4], 1)],
    "chunk": [E("zero chunks", RE, r"chunk expects `chunks` to be greater than 0, got: 0",
                x23, 0)],
    "tensor_split": [E("zero sections", RE, r"number of sections must be larger than 0, got 0",
                       x23, 0),
                     E("0-dim input", RE, r"tensor_split expected at least a 1-dimensional "
                       r"tensor, but got a tensor with 0 dims", T(()), 2)],
    "hsplit": [E("uneven", RE, r"torch\.hsplit attempted to split along dimension 1, but the "
                 r"size of the dimension 3 is not divisible by the split_size 2!", x23, 2)],
    "vsplit": [E("uneven", RE, r"torch\.vsplit attempted to split along dimension 0, but the "
                 r"size of the dimension 3 is not divisible by the split_size 2!", x34, 2),
               E("1-D input", RE, r"torch\.vsplit requires a tensor with at least 2 "
                 r"dimension, but got a tensor with 1 dimensions!", x3, 3)],
    "dsplit": [E("2-D input", RE, r"torch\.dsplit requires a tensor with at least 3 "
                 r"dimension, but got a tensor with 2 dimensions!", x23, 3)],
    "diagonal": [E("same dims", RE, r"diagonal dimensions cannot be identical 0, 0", x34, 0,
                   0, 0),
                 E("dim out of range", IE, r"Dimension out of range", x34, 0, 0, 2)],
    "as_strided": [E("negative stride", RE, r"as_strided: Negative strides are not supported "
                     r"at the moment, got strides: \[-1\]", x34, (2,), (-1,)),
                   E("out of bounds", RE, r"setStorage: sizes \[4, 4\], strides \[4, 1\], "
                     r"storage offset 0, and itemsize 4 requiring a storage size of 64 are "
                     r"out of bounds for storage of size 48", x34, (4, 4), (4, 1))],
    "unfold": [Em("size too big", RE, r"maximum size for tensor at dimension 1 is 3 but "
                  r"size is 4", x23, 1, 4, 1),
               Em("zero step", RE, r"step is 0 but must be > 0", x23, 1, 2, 0)],
    "view_as_real": [E("real input", RE, r"view_as_real is only supported for complex "
                       r"tensors", x23)],
    "view_as_complex": [E("last dim not 2", RE, r"Tensor must have a last dimension of size 2",
                          x23),
                        E("int64 input", RE, r"view_as_complex is only supported for "
                          r"half, float and double tensors, but got a tensor of scalar type: Long",
                          T((3, 2), "int64"))],
    "imag": [E("real input", RE, r"imag is not implemented for tensors with non-complex "
               r"dtypes\.", x23)],
    "__getitem__": [Em("index out of range", IE, r"index 5 is out of bounds for dimension 0 "
                       r"with size 2", x23, 5),
                    Em("too many indices", IE, r"too many indices for tensor of dimension 2",
                       x23, (0, 0, 0))],
}

JOINING = {
    "cat": [E("empty list", VE, r"torch\.cat\(\): expected a non-empty list of Tensors", []),
            E("size mismatch", RE, r"Sizes of tensors must match except in dimension 0\. "
              r"Expected size 3 but got size 4 for tensor number 1 in the list\.",
              [x23, T((2, 4))]),
            E("rank mismatch", RE, r"Tensors must have same number of dimensions: got 2 and 1",
              [x23, x3]),
            E("0-dim input", RE, r"zero-dimensional tensor \(at position 0\) cannot be "
              r"concatenated", [T(()), T(())]),
            E("not a list", TE, r"argument 'tensors' \(position 1\) must be tuple of Tensors, "
              r"not Tensor", x23)],
    "stack": [E("empty list", RE, r"stack expects a non-empty TensorList", []),
              E("size mismatch", RE, r"stack expects each tensor to be equal size, but got "
                r"\[2, 3\] at entry 0 and \[2, 4\] at entry 1", [x23, T((2, 4))])],
    "hstack": [E("empty list", RE, r"hstack expects a non-empty TensorList", [])],
    "vstack": [E("empty list", RE, r"vstack expects a non-empty TensorList", []),
               E("size mismatch", RE, r"Sizes of tensors must match except in dimension 0",
                 [x23, T((2, 4))])],
    "dstack": [E("empty list", RE, r"dstack expects a non-empty TensorList", [])],
    "column_stack": [E("empty list", RE, r"column_stack expects a non-empty TensorList", [])],
    "row_stack": [E("empty list", RE, r"vstack expects a non-empty TensorList", [])],
    "broadcast_tensors": [E("not broadcastable", RE, r"The size of tensor a \(3\) must match "
                            r"the size of tensor b \(4\) at non-singleton dimension 1", x23,
                            T((4,)))],
    "block_diag": [E("3-D input", RE, r"torch\.block_diag: Input tensors must have 2 or fewer "
                     r"dimensions\. Input 0 has 3 dimensions", x234)],
    "meshgrid": [E("2-D input", RE, r"torch\.meshgrid: Expected 0D or 1D tensor in the tensor "
                   r"list but got: ", x23, x3, indexing="ij"),
                 E("bad indexing", RE, r"torch\.meshgrid: indexing must be one of \"xy\" or "
                   r"\"ij\", but received: ab", x3, x3, indexing="ab")],
    "tile": [E("negative repeat", RE, r"Trying to create tensor with negative dimension -2: "
               r"\[-2, 6\]", x23, (-1, 2))],
    "repeat": [Em("too few repeats", RE, r"Number of dimensions of repeat dims can not be "
                  r"smaller than number of dimensions of tensor", x23, 2),
               Em("negative repeat", RE, r"Trying to create tensor with negative dimension -3: "
                  r"\[2, -3\]", x23, 1, -1)],
    "roll": [E("shifts/dims length", RE, r"shifts and dimensions must align\. shifts: 2, "
               r"dims:1", x23, (1, 1), (0,))],
    "flip": [E("repeated dim", RE, r"dim 0 appears multiple times in the list of dims", x23,
               (0, 0)),
             E("dim out of range", IE, r"Dimension out of range", x23, (2,))],
    "fliplr": [E("1-D input", RE, r"Input must be >= 2-d\.", x3)],
    "rot90": [E("same dims", RE, r"expected rotation dims to be different, but got dim0 = 0 "
                r"and dim1 = 0", x23, 1, (0, 0)),
              E("one dim", RE, r"expected total rotation dims == 2, but got dims = 1", x23, 1,
                (0,))],
    "tril": [E("1-D input", RE, r"tril: input tensor must have at least 2 dimensions", x3)],
    "triu": [E("1-D input", RE, r"triu: input tensor must have at least 2 dimensions", x3)],
    "repeat_interleave": [E("negative repeats", RE, r"repeats can not be negative", x3,
                            I([1, -1, 2]), dim=0),
                          E("repeats size", RE, r"repeats must have the same size as input "
                            r"along dim, but got repeats\.size\(0\) = 2 and input\.size\(0\) = "
                            r"3", x3, I([1, 2]), dim=0)],
    "diag_embed": [E("same dims", RE, r"diagonal dimensions cannot be identical 0, 0", x23, 0,
                     0, 0)],
    "atleast_1d": [E("str input", TE, r"invalid combination of arguments - got \(str\)|"
                         r"argument 'tensors' \(position 1\) must be tuple of Tensors, not str",
                         "a")],
}

MATMUL = {
    "mm": [E("shape mismatch", RE, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
             x23, T((4, 5))),
           E("1-D input", RE, r"self must be a matrix", x3, T((3, 2))),
           E("dtype mismatch", RE, r"expected m1 and m2 to have the same dtype, but got: float "
             r"!= double|expected (mat1 and mat2|self and mat2) to have the same dtype", x23,
             T((3, 2), "float64"))],
    "bmm": [E("2-D input", RE, r"batch1 must be a 3D tensor", x23, T((3, 4))),
            E("batch mismatch", RE, r"Expected size for first two dimensions of batch2 tensor "
              r"to be: \[2, 3\] but got: \[3, 3\]\.", T((2, 2, 3)),
              T((3, 3, 4)))],
    "matmul": [E("shape mismatch", RE, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                 r"4x5\)", x23, T((4, 5))),
               E("0-D input", RE, r"both arguments to matmul need to be at least 1D, but they "
                 r"are 0D and 2D", T(()), x23),
               E("vector mismatch", RE, r"inconsistent tensor size, expected tensor \[3\] and "
                 r"src \[4\] to have the same number of elements, but got 3 and 4 elements "
                 r"respectively", x3, T((4,))),
               E("batch broadcast", RE, r"The size of tensor a \(2\) must match the size of "
                 r"tensor b \(3\) at non-singleton dimension 0", T((2, 2, 3)), T((3, 3, 2)))],
    "mv": [E("size mismatch", RE, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)",
             x23, T((4,))),
           E("2-D vector", RE, r"vector \+ matrix @ vector expected, got 1, 2, 2", x23, x23)],
    "dot": [E("size mismatch", RE, r"inconsistent tensor size, expected tensor \[3\] and src "
              r"\[4\] to have the same number of elements, but got 3 and 4 elements "
              r"respectively", x3, T((4,))),
            E("2-D input", RE, r"1D tensors expected, but got 2D and 1D tensors", x23, x3),
            E("dtype mismatch", RE, r"dot : expected both vectors to have same dtype, but "
              r"found Float and Double", x3, T((3,), "float64"))],
    "vdot": [E("2-D input", RE, r"1D tensors expected, but got 2D and 1D tensors", x23, x3)],
    "outer": [E("2-D input", RE, r"outer: Expected 1-D argument self, but got 2-D", x23, x3)],
    "ger": [E("2-D input", RE, r"outer: Expected 1-D argument self, but got 2-D", x23, x3)],
    "addmm": [E("shape mismatch", RE, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                r"4x4\)", T((2, 4)), x23, T((4, 4))),
              E("bad self", RE, r"The expanded size of the tensor \(4\) must match the "
                r"existing size \(3\)", T((3,)), x23, T((3, 4)))],
    "addmv": [E("size mismatch", RE, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)",
                T((2,)), x23, T((4,)))],
    "addbmm": [E("batch mismatch", RE, r"batch1 and batch2 must have same number of batches, "
                 r"got 2 and 3", T((2, 4)), T((2, 2, 3)), T((3, 3, 4)))],
    "baddbmm": [E("batch mismatch", RE, r"Expected size for first two dimensions of batch2 "
                  r"tensor to be: \[2, 3\] but got: \[2, 4\]\.", T((2, 2, 4)), T((2, 2, 3)),
                  T((2, 4, 4)))],
    "linear": [E("shape mismatch", RE, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                 r"4x5\)", x23, T((5, 4)))],
    "cross": [E("size 3 missing", RE, r"no dimension of size 3 in input", T((2, 4)), T((2, 4))),
              E("shape mismatch", RE, r"linalg\.cross: inputs dimension 1 must have length 3\. "
                r"Got 4 and 4|The size of tensor a", T((2, 3)), T((4, 3)), dim=1)],
    "kron": [E("str input", TE, r"must be Tensor, not str", x23, "a")],
    "trace": [E("1-D input", RE, r"trace: expected a matrix, but got tensor with dim 1", x3)],
    "tensordot": [E("dims mismatch", RE, r"contracted dimensions need to match, but first has "
                    r"size 3 in dim 1 and second has size 4 in dim 0", x23, T((4, 3)),
                    dims=([1], [0])),
                  E("negative dims", RE, r"tensordot expects dims >= 0, but got dims=-1", x23,
                    x34, dims=-1)],
    "einsum": [E("operand count", RE, r"einsum\(\): more operands were provided than "
                 r"specified in the equation", "ij->i", x23, x23),
               E("subscript count", RE, r"einsum\(\): the number of subscripts in the equation "
                 r"\(1\) does not match the number of dimensions \(2\) for operand 0 and no "
                 r"ellipsis was given", "i->i", x23),
               E("size mismatch", RE, r"einsum\(\): subscript i has size 3 for operand 1 which "
                 r"does not broadcast with previously seen size 2", "ij,ij->ij", x23, x34)],
    "chain_matmul": [E("shape mismatch", RE, r"multi_dot\(\): tensors 0 and 1 with shapes "
                       r"\[2, 3\] and \[4, 5\] cannot be multiplied", x23, T((4, 5)),
                       T((5, 2)))],
    "inner": [E("size mismatch", RE, r"inner\(\) the last dimension must match on both input "
                r"tensors but got shapes \[2, 3\] and \[3, 4\]", x23, x34)],
}

INDEXING = {
    "index_select": [E("index out of range", IE, r"index out of range in self", x34, 0,
                       I([5])),
                     E("float index", RE, r"index_select\(\): Expected dtype int32 or int64 "
                       r"for index", x34, 0, T((2,))),
                     E("2-D index", IE, r"index_select\(\): Index is supposed to be a vector",
                       x34, 0, I([[0]]))],
    "gather": [E("index out of range", RE, r"index 5 is out of bounds for dimension 1 with "
                 r"size 4", x34, 1, I([[5]])),
               E("float index", RE, r"gather\(\): Expected dtype int32/int64 for index", x34, 1,
                 T((1, 1))),
               E("rank mismatch", RE, r"Index tensor must have the same number of dimensions "
                 r"as input tensor", x34, 1, I([0]))],
    "take_along_dim": [E("float index", RE, r"torch\.take_along_dim\(\): dtype of indices "
                         r"should be Long but got Float", x34, T((1, 1)), 1),
                       E("rank mismatch", RE, r"torch\.take_along_dim\(\): input and indices "
                         r"should have the same number of dimensions, but got 2 dimensions "
                         r"for input, and 1 dimensions for indices", x34, I([0]), 1)],
    "scatter": [E("index out of range", RE, r"index 7 is out of bounds for dimension 1 with "
                  r"size 4", x34, 1, I([[7]]), T((1, 1))),
                E("float index", RE, r"scatter\(\): Expected dtype int32/int64 for index", x34, 1,
                  T((1, 1)), T((1, 1))),
                E("bad reduce", RE, r"reduce argument must be either add or multiply\.", x34,
                  1, I([[0]]), T((1, 1)), reduce="max")],
    "scatter_add": [E("index out of range", RE, r"index 7 is out of bounds for dimension 1 "
                      r"with size 4", x34, 1, I([[7]]), T((1, 1))),
                    E("dtype mismatch", RE, r"scatter\(\): Expected self\.dtype to be equal to "
                      r"src\.dtype", x34, 1, I([[0]]), T((1, 1), "float64"))],
    "scatter_reduce": [E("bad reduce", RE, r"reduce argument must be either sum, prod, mean, "
                         r"amax or amin, got bad", x34, 1, I([[0]]), T((1, 1)), "bad")],
    "index_add": [E("index out of range", RE, r"index 5 is out of bounds for dimension 0 with "
                    r"size 3", x34, 0, I([5]), T((1, 4))),
                  E("source size", RE, r"source tensor shape must match self tensor shape, "
                    r"excluding the specified dimension", x34, 0, I([0]), T((1, 3)))],
    "index_copy": [E("index out of range", IE, r"index_copy_\(\): index 5 is out of bounds "
                     r"for dimension 0 with size 3", x34, 0, I([5]), T((1, 4))),
                   E("float index", RE, r"index_copy_\(\): Expected a long tensor for index, "
                     r"but got Float", x34, 0, T((1,)), T((1, 4)))],
    "index_fill": [E("index out of range", IE, r"index 5 is out of bounds for dimension 0 "
                     r"with size 3", x34, 0, I([5]), 1.0)],
    "index_put": [E("index out of range", IE, r"index 5 is out of bounds for dimension 0 with "
                    r"size 3", x34, (I([5]),), T(()))],
    "put": [E("index out of range", IE, r"out of range: tried to access index 12 on a tensor "
              r"of 12 elements\.", x34, I([12]), T((1,)))],
    "take": [E("index out of range", IE, r"out of range: tried to access index 12 on a tensor "
               r"of 12 elements\.", x34, I([12])),
             E("float index", RE, r"take\(\): Expected a long tensor for index, but got Float",
               x34, T((1,)))],
    "masked_select": [E("not broadcastable", RE, r"The size of tensor a \(3\) must match the "
                        r"size of tensor b \(4\) at non-singleton dimension 1", x34,
                        T((3,), "bool")),
                      E("float mask", RE, r"masked_select: expected BoolTensor for mask", x34,
                        x34)],
    "masked_fill": [E("float mask", RE, r"masked_fill_ only supports boolean masks, but got "
                      r"mask with dtype float", x34, x34, 1.0),
                    E("2-D value", RE, r"masked_fill_ only supports a 0-dimensional value "
                      r"tensor, but got tensor with 1 dimension\(s\)\.", x34,
                      T((3, 4), "bool"), T((1,)))],
    "masked_scatter": [E("float mask", RE, r"masked_scatter_ only supports boolean masks, but "
                         r"got mask with dtype Float", x34, x34, T((12,)))],
    "embedding": [E("index out of range", IE, r"index out of range in self", I([3]), x34),
                  E("float index", RE, r"Expected tensor for argument #1 'indices' to have one "
                    r"of the following scalar types: Long, Int; but got torch\.FloatTensor "
                    r"instead", T((2,)), x34)],
    "unravel_index": [E("float index", TE, r"expected 'indices' to be integer dtype, but got "
                        r"\w+\.float32", T((2,)), (2, 3))],
    "bincount": [E("negative", RE, r"bincount only supports 1-d non-negative integral inputs\.",
                   I([1, -1])),
                 E("2-D input", RE, r"bincount only supports 1-d non-negative integral "
                   r"inputs\.", I([[1]]))],
    "searchsorted": [E("rank mismatch", RE, r"torch\.searchsorted\(\): boundaries tensor "
                       r"should be 1 dimension or the first N-1 dimensions of boundaries "
                       r"tensor and input value tensor must match", T((2, 3)), T((3, 3)))],
    "kthvalue": [E("k out of range", RE, r"kthvalue\(\): selected number k out of range for "
                   r"dimension 1", x34, 5, 1)],
    "topk": [E("k too big", RE, r"selected index k out of range", x34, 5, 1)],
    "diag": [E("3-D input", RE, r"diag\(\): Supports 1D or 2D tensors\. Got 3D", x234)],
    "diagflat": [E("str input", TE, r"must be Tensor, not str", "a")],
    "polygamma": [E("str operand", TE, r"must be Tensor, not str", 1, "a"),
                  E("float order", TE, r"argument 'n' \(position 1\) must be int, not float",
                    1.5, x23)],
    "nonzero_static": [E("negative size", RE, r"nonzero_static: 'size' must be an non-negative "
                         r"integer", x34, size=-1)],
}

CREATION = {
    "arange": [E("zero step", RE, r"step must be nonzero", 0, 5, 0),
               E("wrong sign", RE, r"upper bound and lower bound inconsistent with step sign",
                 0, 5, -1),
               E("infinite end", RE, r"unsupported range: 0 -> inf", 0, float("inf"))],
    "range": [E("zero step", RE, r"step must be nonzero", 0, 5, 0)],
    "linspace": [E("negative steps", RE, r"number of steps must be non-negative", 0, 1, -1)],
    "logspace": [E("negative steps", RE, r"number of steps must be non-negative", 0, 1, -1)],
    "zeros": [E("negative size", RE, r"Trying to create tensor with negative dimension -1: "
                r"\[-1\]|Dimension size must be non-negative", -1)],
    "ones": [E("negative size", RE, r"Trying to create tensor with negative dimension -2: "
               r"\[2, -2\]|Dimension size must be non-negative", 2, -2)],
    "empty": [E("negative size", RE, r"Trying to create tensor with negative dimension -1: "
                r"\[-1\]|Dimension size must be non-negative", -1)],
    "full": [E("negative size", RE, r"Trying to create tensor with negative dimension -1|"
               r"Dimension size must be non-negative", (-1,), 1.0)],
    "eye": [E("negative n", RE, r"n must be greater or equal to 0, got -1", -1),
            E("negative m", RE, r"m must be greater or equal to 0, got -2", 2, -2)],
    "tensor": [E("ragged", VE, r"expected sequence of length 2 at dim 1 \(got 1\)",
                 [[1, 2], [3]]),
               E("str data", TE, r"new\(\): invalid data type 'str'", "a")],
    "tril_indices": [E("negative row", RE, r"row must be non-negative, got-1", -1, 3)],
    "triu_indices": [E("negative col", RE, r"col must be non-negative, got-1", 3, -1)],
    "fft_fftfreq": [E("negative n", RE, r"Trying to create tensor with negative dimension -1",
                      -1)],
    "hann_window": [E("negative length", RE, r"hann_window requires non-negative window_length, "
                      r"got window_length=-1", -1)],
    "hamming_window": [E("negative length", RE, r"hamming_window requires non-negative "
                         r"window_length, got window_length=-1", -1)],
    "bartlett_window": [E("negative length", RE, r"bartlett_window requires non-negative "
                          r"window_length, got window_length=-1", -1)],
    "blackman_window": [E("negative length", RE, r"blackman_window requires non-negative "
                          r"window_length, got window_length=-1", -1)],
    "kaiser_window": [E("negative length", RE, r"kaiser_window requires non-negative "
                        r"window_length, got window_length=-1", -1)],
    "empty_strided": [E("length mismatch", RE, r"dimensionality of sizes \(2\) must match "
                        r"dimensionality of strides \(1\)",
                        (2, 3), (1,))],
    "full_like": [E("str value", TE, r"must be Number, not str", x23, "a")],
}

RANDOM = {
    "randint": [E("low >= high", RE, r"random_ expects 'from' to be less than 'to', but got "
                  r"from=5 >= to=5", 5, 5, (3,))],
    "randperm": [E("negative n", RE, r"Trying to create tensor with negative dimension -1: "
                  r"\[-1\]", -1)],
    "rand": [E("negative size", RE, r"Trying to create tensor with negative dimension -1|"
               r"Dimension size must be non-negative", -1)],
    "randn": [E("negative size", RE, r"Trying to create tensor with negative dimension -1|"
                r"Dimension size must be non-negative", 2, -1)],
    "normal": [E("negative std", RE, r"normal expects std >= 0\.0, but found std -1", 0.0, -1.0,
                 (3,))],
    "multinomial": [E("too many samples", RE, r"cannot sample n_sample > prob_dist\.size\(-1\) "
                      r"samples without replacement", T((3,), lo=0.1, hi=1), 4),
                    E("negative probs", RE, r"probability tensor contains either `inf`, `nan` "
                      r"or element < 0", T((3,), lo=-1, hi=-0.5), 1),
                    E("3-D input", RE, r"prob_dist must be 1 or 2 dim", T((2, 2, 2), lo=0.1,
                                                                           hi=1), 1)],
    "bernoulli": [E("p out of range", RE, r"bernoulli_ expects p to be in \[0, 1\], but got "
                    r"p=2", T((3,), lo=0, hi=1), 2.0)],
    "poisson": [E("negative rate", RE, r"invalid Poisson rate, expected rate to be "
                  r"non-negative", T((3,), lo=-2, hi=-1))],
    "manual_seed": [E("str seed", VE, r"invalid literal for int\(\) with base 10: 'a'", "a")],
}

# generic error inputs that do not apply to an op, with the reason
NO_GENERIC = {
    "norm": {"float dim": "torch.norm is Python code: len(dim) fails first (TypeError "
                          "\"object of type 'float' has no len()\")",
             "repeated dim": "norm's second positional argument is p, not dim"},
    "polygamma": {"str operand": "its first argument is the order n (own entry below)"},
    "linear": {"bool input": "torch checks that input and weight dtypes match first"},
    "slice_inverse": {"dim=5": "torch does not check dim: the result takes src's geometry "
                               "whatever dim is"},
}

ERRORS = {}
for _table in (VIEWS, JOINING, MATMUL, INDEXING, CREATION, RANDOM, LINALG, FFT, NN, MISC):
    for _k, _v in _table.items():
        ERRORS[_k] = ERRORS.get(_k, []) + _v
