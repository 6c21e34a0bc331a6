"""Toy members of the wire families, one module per family (see test_wire_kit.py)."""
