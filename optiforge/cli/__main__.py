"""``python -m optiforge.cli``: the same as the ``optiforge`` command."""

from optiforge.cli.main import console_main

console_main()
