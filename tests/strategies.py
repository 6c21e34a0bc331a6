"""The conversation, tool and argument strategies, under the name the tests import them by: the one
copy is the library's, :mod:`codec.testing.strategies`."""

from codec.testing.strategies import *  # noqa: F403
