"""`python -m kubelab` is the `kubelab` command."""

import sys

from kubelab.cli import main

sys.exit(main())
