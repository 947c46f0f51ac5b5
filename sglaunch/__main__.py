import sys

from sglaunch.cli.main import main

sys.exit(main())
