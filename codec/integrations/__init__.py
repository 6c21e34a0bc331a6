"""Adapters that plug codec's parsers into model servers; each imports its server only when used."""
