"""`python -m xla_spmd` is the `xla-spmd` command."""

import sys

from xla_spmd.cli import main

sys.exit(main())
