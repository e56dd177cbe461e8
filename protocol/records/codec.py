"""Which record codec runs: the compiled one (``codec_c/``) when it was built, else the pure-Python one.

Both have the same functions, results and errors (``pure_codec.py`` is the reference, and the tests
check they give identical bytes and values). ``pip install -e .`` builds the compiled codec where a C
compiler and the Python headers are present; without them the pure codec is used and one warning says
so. ``ODRADEK_PURE_PYTHON=1`` forces the pure codec, and the Python paths of the clients' own C helpers
(``clients/producer/producer_c``); the CI runs the codec and client tests that way.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType

from . import pure_codec
from .errors import CorruptRecordBatchError

# The compiled module's ABI this Python side expects; a stale build of an older source is not used.
_ABI = 2
PURE_ENV = "ODRADEK_PURE_PYTHON"


def pure_python_forced() -> bool:
    """ODRADEK_PURE_PYTHON is set: the pure-Python codec (and the clients' Python paths) are used."""
    return os.environ.get(PURE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _load() -> tuple[ModuleType, str | None]:
    """(the codec module, why the compiled one is not used or None)."""
    if pure_python_forced():
        return pure_codec, None  # asked for: no warning
    try:
        from . import _codec  # type: ignore[attr-defined]
    except ImportError:
        return pure_codec, "the compiled record codec (protocol/records/codec_c) is not built"
    if getattr(_codec, "ABI", None) != _ABI:
        return pure_codec, f"the compiled record codec is stale (ABI {getattr(_codec, 'ABI', None)}, expected {_ABI})"
    _codec._init(CorruptRecordBatchError)
    return _codec, None


impl, _why_pure = _load()
if _why_pure is not None:
    warnings.warn(f"odradek: {_why_pure}; using the pure-Python codec, several times slower "
                  f"(install gcc and python3-dev, then pip install -e .)", RuntimeWarning, stacklevel=2)


def compiled_module() -> ModuleType | None:
    """The compiled codec if it is built and current (whether or not it is the one in use)."""
    try:
        from . import _codec  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_codec, "ABI", None) != _ABI:
        return None
    _codec._init(CorruptRecordBatchError)
    return _codec


def use(module: ModuleType) -> ModuleType:
    """Make ``module`` (``pure_codec`` or ``compiled_module()``) the codec every caller uses from now on
    (tests and benchmarks compare the two); returns the one used before."""
    global impl, COMPILED, decode_records, decode_consumer_records, decode_arrow, encode_records
    previous = impl
    impl = module
    COMPILED = module is not pure_codec
    decode_records = module.decode_records
    decode_consumer_records = module.decode_consumer_records
    decode_arrow = module.decode_arrow
    encode_records = module.encode_records
    return previous


COMPILED = False
decode_records = decode_consumer_records = decode_arrow = encode_records = None  # set by use()
use(impl)

__all__ = ["COMPILED", "PURE_ENV", "compiled_module", "pure_python_forced", "decode_arrow", "decode_consumer_records", "decode_records",
           "encode_records", "impl", "pure_codec", "use"]
