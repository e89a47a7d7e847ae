"""PyPI packages for the scripts in tools/ that tests run (read_safetensors_check.py,
write_lenet_safetensors.py): import them, or install them into a virtual environment and run
the calling script again under it, or skip.

    import python_venv
    python_venv.require(["safetensors", "numpy"], venv_dir=args.venv)  # before importing them

A script that cannot have its packages exits with status 77 (EXIT_SKIP, CTest's
SKIP_RETURN_CODE) after printing one "SKIPPED: ..." line saying why.
"""

import importlib
import os
import subprocess
import sys

EXIT_SKIP = 77
# Set in the environment of the script run again under the virtual environment, so that it
# skips instead of trying again when the packages still cannot be imported there.
REEXEC_MARKER = "MINIDL_PYTHON_VENV_REEXEC"


def skip(message):
    # CTest shows this line for a skipped test.
    print(f"SKIPPED: {message}")
    sys.exit(EXIT_SKIP)


def _importable(modules):
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


def _ensure_venv_and_reexec(packages, venv_dir):
    """Creates venv_dir with `packages` (once; concurrent runs wait on a lock beside it), then
    runs the calling script again under it; does not return."""
    if os.environ.get(REEXEC_MARKER):
        skip(f"{', '.join(packages)} cannot be imported even in the virtual environment "
             f"{venv_dir}")
    import fcntl

    venv_dir = os.path.abspath(venv_dir)
    os.makedirs(os.path.dirname(venv_dir), exist_ok=True)
    python = os.path.join(venv_dir, "bin", "python")
    with open(venv_dir + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(python):
            created = subprocess.run([sys.executable, "-m", "venv", venv_dir],
                                     capture_output=True, text=True)
            if created.returncode != 0:
                skip(f"cannot create a virtual environment in {venv_dir}: "
                     f"{created.stderr.strip()}")
        imports = "; ".join(f"import {package}" for package in packages)
        if subprocess.run([python, "-c", imports], capture_output=True).returncode != 0:
            installed = subprocess.run(
                [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
                + packages, capture_output=True, text=True)
            if installed.returncode != 0:
                skip(f"cannot pip install {' '.join(packages)} into {venv_dir}: "
                     f"{installed.stderr.strip()[-500:]}")
    env = dict(os.environ, **{REEXEC_MARKER: "1"})
    os.execve(python, [python, os.path.abspath(sys.argv[0])] + sys.argv[1:], env)


def require(packages, venv_dir=None):
    """Returns when every one of `packages` (PyPI names that are also their module names)
    imports. Otherwise, with venv_dir, installs them there and runs the calling script again
    under it; without, or when that fails, skips."""
    if _importable(packages):
        return
    if venv_dir:
        _ensure_venv_and_reexec(packages, venv_dir)
    skip(f"cannot import {' and '.join(packages)} (pass --venv DIR to install them there)")
