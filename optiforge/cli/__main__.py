"""``python -m optiforge.cli``: the same as the ``optiforge`` command."""

from optiforge.cli.main import main

main()
