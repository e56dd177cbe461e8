"""Only the C extensions are declared here; everything else is in pyproject.toml.

``optional=True``: where they cannot be compiled (no gcc or Python headers) the install goes on;
``protocol/records/codec.py`` falls back to the pure-Python codec with a warning, and
``clients/producer/record_futures.py`` and ``clients/producer/producer.py`` to Python, and
``broker/log/checkpoint_writer.py`` to a pool of Python threads.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("odradek.protocol.records._codec",
              [f"protocol/records/codec_c/{name}.c" for name in ("module", "records", "decode", "arrow", "encode")],
              depends=["protocol/records/codec_c/codec.h"], optional=True,
              extra_compile_args=["-O2", "-Wall"]),
    # The blocking Producer's per-record work: untracked record futures, the hand-off's passes over rows.
    Extension("odradek.clients.producer._producer", ["clients/producer/producer_c/producer.c"], optional=True,
              extra_compile_args=["-O2", "-Wall"]),
    # A batch of leader epoch checkpoints written on pthreads with the GIL released once for the batch.
    Extension("odradek.broker.log._checkpoint_writer", ["broker/log/checkpoint_writer_c/checkpoint_writer.c"],
              optional=True, extra_compile_args=["-O2", "-Wall"]),
])
