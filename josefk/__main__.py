import sys

from josefk.cli import main

sys.exit(main())
