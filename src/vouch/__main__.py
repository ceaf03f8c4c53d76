"""``python -m vouch``: the same as the ``vouch`` command."""

from vouch.cli import main

main()
