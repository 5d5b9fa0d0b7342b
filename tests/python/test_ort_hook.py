"""python -m nxrt.hook: the .pth start-up hook that makes `import onnxruntime` give nxrt in
interpreters started with NXRT_AS_ONNXRUNTIME=1. Every install goes into a temporary
directory or virtual environment: the environment running the tests is never changed."""

import importlib.util
import os
import pathlib
import subprocess
import sys
import sysconfig

from nxrt import hook

PYTHON_DIR = str(pathlib.Path(__file__).resolve().parents[2] / "python")
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
# What a child interpreter prints: which module `import onnxruntime` gave.
PROBE = ("import sys\n"
         "try:\n"
         "    import onnxruntime\n"
         "    print(onnxruntime.__name__ if 'nxrt' not in sys.modules else onnxruntime.package_name)\n"
         "except ImportError:\n"
         "    print('none')\n")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != hook.ENV_VAR}
    env.update(extra)
    return env


def _run(args, env, cwd=None):
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def _probe_with_site_dir(site_dir, env):
    """`import onnxruntime` in a fresh interpreter after site.addsitedir(site_dir), which
    processes the .pth files there as interpreter start does."""
    code = f"import site; site.addsitedir({str(site_dir)!r})\n" + PROBE
    return _run([sys.executable, "-c", code], env)


def test_default_dir_is_the_environments_site_packages():
    assert hook.default_dir() == sysconfig.get_paths()["purelib"]


def test_install_status_uninstall(tmp_path):
    env = _env(PYTHONPATH=PYTHON_DIR)
    cli = [sys.executable, "-m", "nxrt.hook"]
    out = _run(cli + ["status", "--dir", str(tmp_path)], env)
    assert out.returncode == 0 and "not installed" in out.stdout
    out = _run(cli + ["install", "--dir", str(tmp_path)], env)
    assert out.returncode == 0, out.stderr
    pth = tmp_path / hook.PTH_NAME
    assert pth.read_text() == hook.PTH_LINE and len(pth.read_text().splitlines()) == 1
    out = _run(cli + ["status", "--dir", str(tmp_path)], _env(PYTHONPATH=PYTHON_DIR, **{hook.ENV_VAR: "1"}))
    assert f"installed: {pth}" in out.stdout and "is set" in out.stdout
    assert _run(cli + ["uninstall", "--dir", str(tmp_path)], env).returncode == 0
    assert not pth.exists()
    out = _run(cli + ["uninstall", "--dir", str(tmp_path)], env)
    assert out.returncode == 0 and "not installed" in out.stdout


def test_the_variable_switches_onnxruntime_to_nxrt(tmp_path):
    hook.install(tmp_path)
    env = _env(PYTHONPATH=PYTHON_DIR)
    on = _probe_with_site_dir(tmp_path, {**env, hook.ENV_VAR: "1"})
    assert on.returncode == 0 and on.stdout.strip() == "nxrt", on.stderr
    # Without it (or with another value) nothing happens: nxrt is not even imported.
    for value in (None, "0"):
        extra = {} if value is None else {hook.ENV_VAR: value}
        off = _probe_with_site_dir(tmp_path, {**env, **extra})
        assert off.returncode == 0 and off.stderr == ""
        assert off.stdout.strip() == ("onnxruntime" if HAS_ORT else "none")


def test_a_failure_is_reported_and_the_interpreter_starts(tmp_path, monkeypatch, capsys):
    import nxrt

    def fail():
        raise RuntimeError("boom")

    monkeypatch.setattr(nxrt, "install_as_onnxruntime", fail)
    hook.at_interpreter_start()  # must not raise
    assert "could not stand in for onnxruntime: RuntimeError: boom" in capsys.readouterr().err
    # nxrt itself not importable: Python's site module reports it and the start goes on.
    hook.install(tmp_path)
    out = _run([sys.executable, "-c", f"import site; site.addsitedir({str(tmp_path)!r}); "
                                      f"print('started')"],
               _env(PYTHONPATH="", **{hook.ENV_VAR: "1"}), cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "started"
    assert hook.PTH_NAME in out.stderr


def test_in_a_virtual_environment(tmp_path):
    """The whole round trip in a new venv: install writes into the venv's site-packages,
    interpreters started there with the variable import nxrt as onnxruntime, uninstall
    undoes it. The venv sees nxrt (and numpy, onnxruntime) through PYTHONPATH."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True, timeout=120)
    python = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    here = sysconfig.get_paths()["purelib"]
    env = _env(PYTHONPATH=os.pathsep.join([PYTHON_DIR, here]))
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   env).stdout.strip()
    assert purelib and os.path.realpath(purelib) != os.path.realpath(here)
    assert _run([python, "-m", "nxrt.hook", "install"], env).returncode == 0
    assert os.path.isfile(os.path.join(purelib, hook.PTH_NAME))
    assert not os.path.exists(os.path.join(here, hook.PTH_NAME))  # this environment untouched
    probe = [python, "-c", PROBE]
    on = _run(probe, {**env, hook.ENV_VAR: "1"})
    assert on.stdout.strip() == "nxrt", on.stderr
    off = _run(probe, env)
    assert off.stdout.strip() == ("onnxruntime" if HAS_ORT else "none") and off.stderr == ""
    assert _run([python, "-m", "nxrt.hook", "uninstall"], env).returncode == 0
    assert not os.path.exists(os.path.join(purelib, hook.PTH_NAME))
    after = _run(probe, {**env, hook.ENV_VAR: "1"})
    assert after.stdout.strip() == ("onnxruntime" if HAS_ORT else "none")
