"""Unit constants. Calculators return raw bytes; these convert for display."""

GB = 10**9  # decimal gigabyte, as the ZeRO paper and GPU spec sheets use
GIB = 2**30
MIB = 2**20


# The units a page offers for memory: decimal GB (spec sheets) and binary GiB (nvidia-smi).
MEMORY_UNITS = {"GB": GB, "GiB": GIB}


def to_gb(n_bytes: float) -> float:
    return n_bytes / GB
