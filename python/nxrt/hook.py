"""``python -m nxrt.hook install | uninstall | status [--dir DIR]``

``install`` makes every interpreter of this Python environment that starts with the
environment variable ``NXRT_AS_ONNXRUNTIME=1`` run ``nxrt.install_as_onnxruntime()``, so
``import onnxruntime`` gives nxrt there, in scripts and libraries alike, unchanged. It writes
one file, ``nxrt_as_onnxruntime.pth``, into the environment's site-packages (sysconfig's
"purelib", or DIR): Python's ``site`` module runs its one line at start-up. Without the
variable the line only reads it (nxrt is not even imported), so other programs are not
slowed or changed. ``uninstall`` removes the file; ``status`` says whether it is there.

If nxrt cannot be put in place at start-up, the interpreter still starts: the reason is
printed on stderr (by ``at_interpreter_start``, or, when nxrt itself cannot be imported, by
the ``site`` module), and ``import onnxruntime`` then imports onnxruntime, if installed."""

import argparse
import os
import sys
import sysconfig

ENV_VAR = "NXRT_AS_ONNXRUNTIME"
PTH_NAME = "nxrt_as_onnxruntime.pth"
# site.py executes .pth lines that start with "import". The variable is checked before nxrt
# is imported, since importing nxrt (numpy, the native module) would slow every start.
PTH_LINE = (f"import os; os.environ.get({ENV_VAR!r}) == '1' and "
            f"__import__('nxrt.hook').hook.at_interpreter_start()\n")


def at_interpreter_start():
    """What the .pth line calls when the variable is set: nxrt.install_as_onnxruntime(),
    with any failure reported on stderr rather than raised into the interpreter's start."""
    try:
        import nxrt

        nxrt.install_as_onnxruntime()
    except Exception as e:  # never fail the interpreter's start
        print(f"nxrt: {ENV_VAR}=1, but nxrt could not stand in for onnxruntime: "
              f"{type(e).__name__}: {e}", file=sys.stderr)


def default_dir():
    """This environment's site-packages (where pip installs pure-Python packages)."""
    return sysconfig.get_paths()["purelib"]


def install(directory=None):
    """Writes the .pth file into `directory` (default: default_dir()); returns its path."""
    path = os.path.join(directory or default_dir(), PTH_NAME)
    with open(path, "w") as f:
        f.write(PTH_LINE)
    return path


def uninstall(directory=None):
    """Removes the .pth file; returns its path, or None if it was not there."""
    path = os.path.join(directory or default_dir(), PTH_NAME)
    try:
        os.remove(path)
    except FileNotFoundError:
        return None
    return path


def installed(directory=None):
    """The path of the .pth file if it is installed, else None."""
    path = os.path.join(directory or default_dir(), PTH_NAME)
    return path if os.path.isfile(path) else None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nxrt.hook",
        description=f"Make 'import onnxruntime' give nxrt in interpreters of this environment "
                    f"started with {ENV_VAR}=1.")
    parser.add_argument("command", choices=["install", "uninstall", "status"])
    parser.add_argument("--dir", help="the site-packages directory (default: this "
                                      "environment's, %(default)s)", default=default_dir())
    args = parser.parse_args(argv)
    if args.command == "install":
        path = install(args.dir)
        print(f"installed {path}: interpreters started with {ENV_VAR}=1 import nxrt as "
              f"onnxruntime ('python -m nxrt.hook uninstall' removes it)")
    elif args.command == "uninstall":
        path = uninstall(args.dir)
        print(f"removed {path}" if path else f"not installed in {args.dir}")
    else:
        path = installed(args.dir)
        state = "set" if os.environ.get(ENV_VAR) == "1" else "not set"
        print(f"installed: {path}" if path else f"not installed in {args.dir}")
        print(f"{ENV_VAR}=1 is {state} in this environment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
