"""Only the compiled record codec is declared here; everything else is in pyproject.toml.

``optional=True``: where it cannot be compiled (no gcc or Python headers) the install goes on and
``protocol/records/codec.py`` falls back to the pure-Python codec with a warning.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("odradek.protocol.records._codec",
              [f"protocol/records/codec_c/{name}.c" for name in ("module", "records", "decode", "arrow", "encode")],
              depends=["protocol/records/codec_c/codec.h"], optional=True,
              extra_compile_args=["-O2", "-Wall"]),
])
