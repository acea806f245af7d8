"""``python -m ctx_kernel.kernel.hosts.cli``: the ``ctx`` command."""

from ctx_kernel.kernel.hosts.cli import main

if __name__ == "__main__":
    main()
