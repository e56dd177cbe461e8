"""Shared setup for the record-batch tests."""

import warnings

# kafka-python 3.0.12 loads its JSON schemas through a deprecated importlib API on first import;
# import it once here, quietly, so the warnings do not drown the test report.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka  # noqa: F401
    import kafka.codec  # noqa: F401
    import kafka.record  # noqa: F401
