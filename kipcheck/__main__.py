import sys
from kipcheck.cli import main

sys.exit(main())
