"""The dtypes TF1 programs name (``tf.float32``, ``tf.int64``, ``tf.string``, ...).

shoal's engine keeps three value types: float (32-bit), int64 and string. Other numeric dtypes are
accepted where TF accepts them and read as the nearest of those.
"""


class DType:
    def __init__(self, name, kind):
        self.name = name
        self.kind = kind  # float | int | string | bool

    def __repr__(self):
        return f"tf.{self.name}"

    @property
    def as_numpy_dtype(self):
        import numpy as np
        return {"string": object}.get(self.kind, getattr(np, self.name, None))


float16 = DType("float16", "float")
float32 = DType("float32", "float")
float64 = DType("float64", "float")
int8 = DType("int8", "int")
int16 = DType("int16", "int")
int32 = DType("int32", "int")
int64 = DType("int64", "int")
uint8 = DType("uint8", "int")
string = DType("string", "string")
bool = DType("bool", "bool")  # noqa: A001 (TF's name)
double = float64
half = float16


def _kind(dtype):
    if isinstance(dtype, DType):
        return dtype.kind
    if dtype in (str, bytes, object):
        return "string"
    try:
        import numpy as np
        k = np.dtype(dtype).kind
    except TypeError:
        return None
    return {"f": "float", "i": "int", "u": "int", "b": "bool", "U": "string", "S": "string",
            "O": "string"}.get(k)


def is_numeric(dtype):
    return _kind(dtype) in ("float", "int")


def is_integer(dtype):
    return _kind(dtype) == "int"


def is_string(dtype):
    return _kind(dtype) == "string"
