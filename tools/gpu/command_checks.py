"""Checks of a CUDA step's command line on a machine without a GPU, for run.sh --rehearse: what
can be known about a command without running it, so that a typo in a late step shows before any
GPU time is spent.

    checks = command_checks.check(command, environment, not_checkable=[nvidia_dir])

Each check is {"check": what, "ok": True | False | None, "detail": ...}; None means it cannot be
checked on this machine (compute-sanitizer not installed, a path only the GPU machine has).
By the command's shape:
    env VAR=... CMD       CMD's checks
    ctest ...             the same command with -N lists at least one test
    compute-sanitizer ... the sanitizer runs (--version), then the program's checks
    with_kit_mpi_only.sh CMD  the script exists, then CMD's checks
    mpirun ... PROGRAM    mpirun is on PATH and --version runs, then PROGRAM's checks
    cmake --build DIR     DIR is a configured Ninja build that has every --target named
    cmake -S ... -B ...   the source has CMakeLists.txt; every absolute path in a -D exists
    python3 SCRIPT ...    SCRIPT compiles; `SCRIPT ARGS --help` succeeds (with stand-ins for
                          torch and numpy where they are not installed), and every --option in
                          ARGS is in the help; the input paths given (--bench, ...) exist
    PROGRAM_tests ...     a GoogleTest program: its --gtest_filter lists at least one test
    PROGRAM ...           a CLI11 program: `PROGRAM ARGS --help` succeeds (CLI11 checks each
                          value), and every --option in ARGS is in PROGRAM --help
"""
import os
import re
import shutil
import subprocess
import sys

CHECK_SECONDS = 60
SANITIZER_OPTIONS_WITH_VALUES = {"--tool", "--error-exitcode", "--print-limit",
                                 "--racecheck-report", "--log-file", "--target-processes",
                                 "--report-api-errors"}
# mpirun's options that take a value (--mca takes two); other options are flags.
MPIRUN_OPTIONS_WITH_VALUES = {"-np", "-n", "-c", "-x", "--map-by", "--bind-to", "--rank-by",
                              "--host", "-H", "--hostfile", "--npernode"}
# Options whose values must exist before the command runs.
INPUT_PATH_OPTIONS = {"--bench", "--python", "--test-dir", "--data-dir"}

# Run as `python3 -c TORCH_STAND_IN SCRIPT ARGS...`: runs SCRIPT as __main__ with stand-ins for
# the modules below that cannot be imported here, so that its argparse --help runs: any
# attribute, call or base class of a stand-in is the stand-in class again.
TORCH_STAND_IN = r'''
import importlib.abc, importlib.machinery, importlib.util, os, runpy, sys, types

class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything
    def __call__(cls, *args, **kwargs):
        return Anything
    def __getitem__(cls, key):
        return Anything

class Anything(metaclass=_Meta):
    pass

class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots):
        self.roots = roots
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None
    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda name: Anything
        return module
    def exec_module(self, module):
        pass

missing = [name for name in ("torch", "numpy") if importlib.util.find_spec(name) is None]
if missing:
    sys.meta_path.insert(0, _StandIns(set(missing)))
    print("(stand-ins for " + ", ".join(missing) + ", not installed here)", file=sys.stderr)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
runpy.run_path(script, run_name="__main__")
'''


def _result(check, ok, detail=""):
    return {"check": check, "ok": ok, "detail": detail[-600:] if detail else ""}


def _run(command, environment):
    try:
        completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, env=environment, timeout=CHECK_SECONDS)
        return completed.returncode, completed.stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, str(error)


def _options(arguments):
    """The --long options in `arguments` (an --option=value counts as --option)."""
    return [argument.split("=")[0] for argument in arguments
            if re.fullmatch(r"--[A-Za-z][-A-Za-z0-9_]*(=.*)?", argument)]


def _value_of(arguments, option):
    for index, argument in enumerate(arguments):
        if argument == option and index + 1 < len(arguments):
            return arguments[index + 1]
        if argument.startswith(option + "="):
            return argument.split("=", 1)[1]
    return None


def _options_in_help(arguments, help_text, what):
    missing = [option for option in _options(arguments)
               if not re.search(re.escape(option) + r"(?![-A-Za-z0-9_])", help_text)]
    return _result(f"{what} --help names every option given", not missing,
                   "not in the help: " + " ".join(missing) if missing else "")


def _input_paths(arguments):
    results = []
    for option in INPUT_PATH_OPTIONS:
        value = _value_of(arguments, option)
        if value is not None:
            found = shutil.which(value) if option == "--python" else value
            exists = bool(found) and os.path.exists(found)
            results.append(_result(f"{option} {value} exists", exists))
    return results


def _ctest(command, environment):
    code, output = _run(command + ["-N"], environment)
    listed = re.findall(r"^Total Tests: (\d+)$", output, flags=re.MULTILINE)
    count = int(listed[-1]) if listed else 0
    return [_result("ctest -N lists tests for this selection", code == 0 and count > 0,
                    f"{count} tests" if code == 0 else output)]


def _gtest(program, arguments, environment):
    filters = [argument for argument in arguments if argument.startswith("--gtest_filter=")]
    code, output = _run([program, "--gtest_list_tests"] + filters, environment)
    count = len(re.findall(r"^  \S", output, flags=re.MULTILINE))
    return [_result(f"{os.path.basename(program)} {' '.join(filters)} lists tests",
                    code == 0 and count > 0, f"{count} tests" if code == 0 else output)]


def _program(command, environment):
    program, arguments = command[0], command[1:]
    path = shutil.which(program, path=environment.get("PATH"))
    if not path:
        return [_result(f"{program} exists and is executable", False)]
    results = [_result(f"{program} exists and is executable", True)]
    if re.search(r"_tests$", os.path.basename(program)):
        return results + _gtest(path, arguments, environment)
    code, help_text = _run([path, "--help"], environment)
    results.append(_result(f"{os.path.basename(program)} --help runs", code == 0,
                           "" if code == 0 else help_text))
    code, output = _run([path] + arguments + ["--help"], environment)
    results.append(_result(f"{os.path.basename(program)} accepts the values given", code == 0,
                           "" if code == 0 else output))
    results.append(_options_in_help(arguments, help_text, os.path.basename(program)))
    return results + _input_paths(arguments)


def _python(command, environment):
    python, script, arguments = command[0], command[1], command[2:]
    if not os.path.isfile(script):
        return [_result(f"{script} exists", False)]
    results = []
    try:
        with open(script, encoding="utf-8") as source:
            compile(source.read(), script, "exec")
        results.append(_result(f"{script} compiles", True))
    except (SyntaxError, ValueError) as error:
        return [_result(f"{script} compiles", False, str(error))]
    code, help_text = _run([python, "-c", TORCH_STAND_IN, script, "--help"], environment)
    results.append(_result(f"{os.path.basename(script)} --help runs", code == 0,
                           help_text.splitlines()[0] if code == 0 and help_text else help_text))
    code, output = _run([python, "-c", TORCH_STAND_IN, script] + arguments + ["--help"],
                        environment)
    results.append(_result(f"{os.path.basename(script)} accepts the values given", code == 0,
                           "" if code == 0 else output))
    results.append(_options_in_help(arguments, help_text, os.path.basename(script)))
    return results + _input_paths(arguments)


def _cmake(command, environment, not_checkable):
    if "--build" in command:
        directory = _value_of(command, "--build")
        results = [_result(f"{directory} is a configured Ninja build",
                           os.path.isfile(os.path.join(directory, "build.ninja")))]
        targets = command[command.index("--target") + 1:] if "--target" in command else []
        targets = [target for target in targets if not target.startswith("-")]
        if targets and results[0]["ok"]:
            code, output = _run(["ninja", "-C", directory, "-t", "targets", "all"], environment)
            known = set(re.findall(r"^(\S+): ", output, flags=re.MULTILINE))
            missing = [target for target in targets if target not in known]
            results.append(_result("the build has every --target", code == 0 and not missing,
                                   "missing: " + " ".join(missing) if missing else ""))
        return results
    source = _value_of(command, "-S")
    results = [_result(f"-S {source} has CMakeLists.txt",
                       os.path.isfile(os.path.join(source or ".", "CMakeLists.txt")))]
    for argument in command:
        for path in re.findall(r"(?:^-D[A-Za-z_]+(?::\w+)?=|-I)(/[^ ]+)", argument):
            if any(path.startswith(prefix) for prefix in not_checkable if prefix):
                results.append(_result(f"{path} exists", None, "only on the GPU machine"))
            else:
                results.append(_result(f"{path} exists", os.path.exists(path)))
    for tool in ("cmake", "ninja"):
        results.append(_result(f"{tool} is installed", bool(shutil.which(tool))))
    return results


def _mpirun(command, environment, not_checkable):
    if not shutil.which(command[0], path=environment.get("PATH")):
        return [_result(f"{command[0]} is on PATH", False)]
    code, output = _run([command[0], "--version"], environment)
    results = [_result(f"{command[0]} --version runs", code == 0,
                       output.splitlines()[0] if code == 0 and output else output)]
    index = 1
    while index < len(command) and command[index].startswith("-"):
        option = command[index]
        index += 3 if option == "--mca" else 2 if option in MPIRUN_OPTIONS_WITH_VALUES else 1
    return results + check(command[index:], environment, not_checkable)


def check(command, environment, not_checkable=()):
    command = list(command)
    if command and command[0] == "env":
        command = command[1:]
        while command and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", command[0]):
            command = command[1:]
    if not command:
        return [_result("a command is given", False)]
    name = os.path.basename(command[0])
    if name == "ctest":
        return _ctest(command, environment)
    if name == "cmake":
        return _cmake(command, environment, not_checkable)
    if name == "compute-sanitizer":
        if not shutil.which(command[0], path=environment.get("PATH")):
            results = [_result("compute-sanitizer is installed", None, "not on this machine")]
        else:
            code, output = _run([command[0], "--version"], environment)
            results = [_result("compute-sanitizer --version runs", code == 0, output)]
        index = 1
        while index < len(command) and command[index].startswith("-"):
            index += 2 if command[index] in SANITIZER_OPTIONS_WITH_VALUES else 1
        return results + check(command[index:], environment, not_checkable)
    if name == "with_kit_mpi_only.sh":
        results = [_result(f"{command[0]} exists and is executable",
                           os.access(command[0], os.X_OK))]
        return results + check(command[1:], environment, not_checkable)
    if name in ("mpirun", "mpiexec"):
        return _mpirun(command, environment, not_checkable)
    if re.fullmatch(r"python[0-9.]*", name) and len(command) > 1 and command[1].endswith(".py"):
        return _python(command, environment)
    return _program(command, environment)


if __name__ == "__main__":
    # python3 tools/gpu/command_checks.py COMMAND...: prints the checks of COMMAND.
    import json
    print(json.dumps(check(sys.argv[1:], dict(os.environ)), indent=2))
