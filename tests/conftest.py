"""Test-wide settings: hypothesis runs the same examples on every run and machine.

No example database: a failure found once must not be replayed into other runs (it would make a
run's examples depend on the runs before it); derandomized tests already find it again.
"""

from hypothesis import settings

settings.register_profile("codec", database=None)
settings.load_profile("codec")
