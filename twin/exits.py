"""twin's exit codes, each meaning owned here (docs/reference/cli.md states the same table; a test holds the two
equal). Every command returns one of these; the CLI modules import them, none writes the number itself.

>>> (OK, FAILED, INVALID, WRITE, RISKS, INTERRUPTED)
(0, 1, 2, 3, 4, 130)
"""

OK = 0
FAILED = 1  # a valid design that does not fit; diff: something changed; as-built: a cable differs; verify: a check failed; --check: stale
INVALID = 2  # invalid input, located; never a traceback
WRITE = 3  # an output folder or page could not be written; the previous output intact
RISKS = 4  # the design or its twins fail a check; the output is written all the same
INTERRUPTED = 130  # Ctrl-C
