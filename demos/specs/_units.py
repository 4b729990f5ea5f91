"""Sizes the specs share."""

MIB = 2**20
FLOAT32_BYTES = 4
