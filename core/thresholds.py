"""The output comparison's default thresholds (core.numerics says why these numbers), in a module of the standard
library alone: a command's parser reads them for its defaults, and its --help runs before any environment with numpy
is made (nox -s check -- --help on a fresh clone)."""

DEFAULT_MIN_SQNR_DB = 20.0
DEFAULT_MIN_COSINE = 0.99  # the angle between the two outputs; cos 0.99 is about 17 dB of uncorrelated noise
