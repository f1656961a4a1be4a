"""``python -m controllers`` / ``kubelab controller-manager``."""

import sys

from controllers.cli import main

sys.exit(main())
