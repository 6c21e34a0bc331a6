"""Test-wide hypothesis settings: two profiles, chosen by the environment variable ``CODEC_TESTS``.

* ``default`` (``pytest``): each property runs about a sixteenth of the examples it deserves (at
  least three), so that the whole suite stays within three minutes on CI's two cores;
* ``deep`` (``CODEC_TESTS=deep pytest``): each property runs twice the examples it deserves, for a
  change to the parser core or a format's grammar, and before a release.

A property says how many examples it deserves relative to the others with ``harness.examples(n)``
(``n`` at scale 100, the counts the properties ran before there were profiles); the active
profile's ``max_examples`` is that scale. Both profiles are derandomized (the same examples on
every run and machine), keep no example database (a failure found once must not be replayed into
other runs: it would make a run's examples depend on the runs before it, and derandomized tests
find it again anyway) and set no deadline (the machine may be busy; tests never assert times).

Hypothesis also draws, now and then, constants it finds in the source of the project's modules
that are loaded (tests excluded), so what a derandomized property draws depends on which modules
the process has imported when it runs. Every module of codec is imported here, first, so that a
property draws the same examples whichever tests run with it, on one core or many.
"""

from __future__ import annotations

import importlib
import os
import pkgutil

from hypothesis import HealthCheck, settings

import codec

for _module in pkgutil.walk_packages(codec.__path__, "codec."):
    try:
        importlib.import_module(_module.name)
    except ModuleNotFoundError:
        # An integration whose server is not installed (vLLM): the same modules are missing in
        # every process of a run, so the examples still do not depend on which tests run together.
        if not _module.name.startswith("codec.integrations."):
            raise

#: Examples per 100 that each profile runs (``harness.examples`` scales by it).
SCALES = {"default": 6, "deep": 200}
PROFILE = os.environ.get("CODEC_TESTS") or "default"
if PROFILE not in SCALES:
    raise ValueError(f"CODEC_TESTS={PROFILE!r}: expected one of {', '.join(SCALES)}")

for _name, _scale in SCALES.items():
    settings.register_profile(
        _name,
        max_examples=_scale,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
settings.load_profile(PROFILE)
