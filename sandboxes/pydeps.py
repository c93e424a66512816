"""Python requirements as files: classify them, and fetch source archives without executing anything.

The host never builds a Python package (an sdist's setup.py, a build backend and its plugins are code).
It downloads wheels with pip (`--only-binary :all:`), and when a dependency has no wheel this module
fetches its source archive as a plain file: from a find-links folder or page, or from the index's
simple API (PEP 691 JSON, PEP 503 HTML). The archive is then built inside the sandbox.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import ssl
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

import httpx
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from sandboxes.hostrun import run_host

PYPI_SIMPLE = "https://pypi.org/simple"
#: What pip itself falls back to for a source tree without a [build-system] table (plus wheel, for old pips).
DEFAULT_BUILD_REQUIRES = ("setuptools>=40.8.0", "wheel")
#: Largest archive fetched as a dependency; bigger ones are refused rather than filling the disk.
MAX_ARCHIVE_BYTES = 512 * 1024**2
#: Largest pyproject.toml read out of an archive.
_MAX_PYPROJECT_BYTES = 1024**2
_VCS_PREFIXES = ("git+", "hg+", "svn+", "bzr+")
_SDIST_SUFFIXES = (".tar.gz", ".zip")
#: Transports a git dependency may use: no `ext::` (runs a command), no local paths, no ssh (needs keys).
_GIT_SCHEMES = ("https", "http", "git")
#: Host git for dependency checkouts: no system/global config, hooks or filters; only the network transports.
_SAFE_GIT = (
    "git",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "protocol.allow=never",
    *(item for scheme in _GIT_SCHEMES for item in ("-c", f"protocol.{scheme}.allow=always")),
    "-c",
    "submodule.recurse=false",
    "-c",
    "core.symlinks=true",
)
_SIMPLE_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"


class DependencyError(RuntimeError):
    """A requirement cannot be provided as a file; the message names it and says why."""


@dataclass(frozen=True)
class Classified:
    """One requirement string and what it points at.

    `kind` is "name" (resolved from an index), "url" (an archive at a URL), "path" (a local folder or
    archive) or "vcs" (a version-control checkout). `name` is the distribution name when one is given.
    """

    text: str
    kind: str
    name: str | None = None
    location: str = ""
    extras: tuple[str, ...] = ()

    @property
    def direct(self) -> bool:
        """True for direct references (URL, path, VCS): they bypass the index."""
        return self.kind != "name"


def classify(text: str) -> Classified:
    """What a requirement string refers to; DependencyError when it is neither PEP 508 nor a reference."""
    raw = text.strip()
    if raw.startswith(("-e ", "--editable ")):
        raw = raw.split(None, 1)[1].strip()
    lowered = raw.lower()
    if lowered.startswith(_VCS_PREFIXES):
        return Classified(text, "vcs", _egg_name(raw), raw)
    if "://" in raw.split("@", 1)[0] or lowered.startswith("file:"):
        return Classified(text, "path" if lowered.startswith("file:") else "url", _egg_name(raw), raw)
    if raw.startswith((".", "/", "~")):
        return Classified(text, "path", None, raw)
    try:
        req = Requirement(raw)
    except InvalidRequirement as exc:
        raise DependencyError(f"requirement {text!r} is not a valid PEP 508 requirement: {exc}") from None
    if req.url is None:
        return Classified(text, "name", req.name, "", tuple(sorted(req.extras)))
    url = req.url
    kind = "vcs" if url.lower().startswith(_VCS_PREFIXES) else "path" if url.lower().startswith("file:") else "url"
    return Classified(text, kind, req.name, url, tuple(sorted(req.extras)))


def redact_url(url: str) -> str:
    """The URL with any user name or password (an index token) replaced, for messages and logs."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]).geturl()


def _egg_name(url: str) -> str | None:
    match = re.search(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)", url)
    return match.group(1) if match else None


def missing_distribution(output: str) -> str | None:
    """The requirement pip said it found no (acceptable) distribution for, from its output, or None."""
    found = re.findall(r"No matching distribution found for (\S+)", output)
    return found[-1] if found else None


def archive_build_requires(archive: Path) -> list[str]:
    """`[build-system] requires` of an sdist (read from the archive, nothing extracted or run).

    An archive without that table gets pip's own fallback, setuptools and wheel.
    """
    data = _read_top_member(archive, "pyproject.toml")
    if data is None:
        return list(DEFAULT_BUILD_REQUIRES)
    try:
        table = tomllib.loads(data.decode("utf-8", "replace")).get("build-system")
    except tomllib.TOMLDecodeError:
        return list(DEFAULT_BUILD_REQUIRES)
    if not isinstance(table, dict) or not isinstance(table.get("requires"), list):
        return list(DEFAULT_BUILD_REQUIRES)
    return [str(r) for r in table["requires"] if isinstance(r, str)]


def _read_top_member(archive: Path, name: str) -> bytes | None:
    """The bytes of `<top folder>/name` in a .tar.gz or .zip, if it is a small regular file."""
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    parts = PurePosixPath(info.filename).parts
                    if len(parts) == 2 and parts[1] == name and info.file_size <= _MAX_PYPROJECT_BYTES:
                        return zf.read(info)
            return None
        with tarfile.open(archive, "r:*") as tf:
            for member in tf:
                parts = PurePosixPath(member.name).parts
                if len(parts) == 2 and parts[1] == name and member.isreg() and member.size <= _MAX_PYPROJECT_BYTES:
                    handle = tf.extractfile(member)
                    return handle.read() if handle is not None else None
    except (OSError, tarfile.TarError, zipfile.BadZipFile):
        return None
    return None


def pack_tree(src: Path, dest_dir: Path, name: str) -> Path:
    """A source folder as `name.tar.gz` (top folder `name/`), symlinks stored as links, VCS data left out."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    archive = dest_dir / f"{_safe(name)}.tar.gz"

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if PurePosixPath(info.name).name in (".git", ".hg", ".svn") or info.isdev():
            return None
        return info

    with tarfile.open(archive, "w:gz") as tf:
        tf.add(src, arcname=_safe(name), recursive=True, filter=keep)
    return archive


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "dist"


@dataclass(frozen=True)
class Candidate:
    """One downloadable file found on an index or in a find-links location."""

    filename: str
    url: str
    sha256: str | None = None
    requires_python: str | None = None
    yanked: bool = False


class _Links(HTMLParser):
    """Anchors of a PEP 503 page (or any find-links page): href and the data-* attributes pip reads."""

    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base
        self.found: list[Candidate] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        values = dict(attrs)
        href = values.get("href")
        if not href:
            return
        url = urljoin(self.base, href)
        path, _, fragment = url.partition("#")
        digest = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None
        self.found.append(
            Candidate(
                filename=unquote(PurePosixPath(urlsplit(path).path).name),
                url=path,
                sha256=digest,
                requires_python=values.get("data-requires-python"),
                yanked="data-yanked" in values,
            )
        )


def parse_simple_json(data: dict[str, object], base: str) -> list[Candidate]:
    """Files of a PEP 691 JSON project page."""
    files = data.get("files")
    out: list[Candidate] = []
    for item in files if isinstance(files, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        hashes = item.get("hashes") if isinstance(item.get("hashes"), dict) else {}
        assert isinstance(hashes, dict)
        out.append(
            Candidate(
                filename=str(item.get("filename") or PurePosixPath(urlsplit(item["url"]).path).name),
                url=urljoin(base, item["url"]),
                sha256=hashes.get("sha256") if isinstance(hashes.get("sha256"), str) else None,
                requires_python=item.get("requires-python") if isinstance(item.get("requires-python"), str) else None,
                yanked=bool(item.get("yanked")),
            )
        )
    return out


def parse_simple_html(text: str, base: str) -> list[Candidate]:
    """Files of a PEP 503 HTML page (or a find-links page)."""
    parser = _Links(base)
    parser.feed(text)
    return parser.found


def pick_sdist(candidates: list[Candidate], req: Requirement, python_version: str | None) -> Candidate | None:
    """The newest non-yanked sdist of `req`'s project that its specifier and the interpreter accept."""
    wanted = canonicalize_name(req.name)
    best: tuple[Version, Candidate] | None = None
    for cand in candidates:
        if cand.yanked or not cand.filename.endswith(_SDIST_SUFFIXES):
            continue
        try:
            name, version = parse_sdist_filename(cand.filename)
        except (InvalidSdistFilename, ValueError):
            continue
        if name != wanted or not req.specifier.contains(version, prereleases=bool(req.specifier.prereleases)):
            continue
        if python_version and cand.requires_python:
            try:
                if not SpecifierSet(cand.requires_python).contains(python_version, prereleases=True):
                    continue
            except ValueError:
                continue
        if best is None or version > best[0]:
            best = (version, cand)
    return best[1] if best else None


@dataclass(frozen=True)
class Sources:
    """Where source archives may come from: find-links locations, then indexes (unless no_index)."""

    find_links: tuple[str, ...] = ()
    index_urls: tuple[str, ...] = (PYPI_SIMPLE,)
    no_index: bool = False
    cert: str | None = None

    @classmethod
    def from_pip_settings(cls, environ: dict[str, str], index_url: str | None) -> Sources:
        """The same places pip is told about: the deployment's index URL and pip's own variables."""
        primary = index_url or environ.get("PIP_INDEX_URL") or PYPI_SIMPLE
        extra = tuple(environ.get("PIP_EXTRA_INDEX_URL", "").split())
        no_index = environ.get("PIP_NO_INDEX", "").strip().lower() in ("1", "true", "yes", "on")
        return cls(
            find_links=tuple(environ.get("PIP_FIND_LINKS", "").split()),
            index_urls=(primary, *extra),
            no_index=no_index,
            cert=environ.get("PIP_CERT") or None,
        )


class SourceFetcher:
    """Fetches source archives and direct-reference files into `dest`, as files: nothing is executed."""

    def __init__(self, sources: Sources, dest: Path, *, timeout: float = 120.0) -> None:
        self.sources = sources
        self.dest = dest
        self.timeout = timeout

    def _client(self) -> httpx.AsyncClient:
        # trust_env: the host's proxies and certificate bundle, as pip uses them.
        verify: ssl.SSLContext | bool = True
        cert = self.sources.cert
        if cert:
            # pip's PIP_CERT: a bundle file or a folder of certificates.
            is_dir = os.path.isdir(cert)
            verify = ssl.create_default_context(cafile=None if is_dir else cert, capath=cert if is_dir else None)
        return httpx.AsyncClient(timeout=self.timeout, follow_redirects=True, verify=verify, trust_env=True)

    async def sdist(self, requirement: str, python_version: str | None) -> Path:
        """Fetch the best sdist for `requirement` (find-links first, then the indexes) and return its path."""
        try:
            req = Requirement(requirement)
        except InvalidRequirement as exc:
            raise DependencyError(f"cannot look up sources for {requirement!r}: {exc}") from None
        looked: list[str] = []
        async with self._client() as client:
            for location in self.sources.find_links:
                cands = await self._find_links(client, location)
                looked.append(location)
                found = pick_sdist(cands, req, python_version)
                if found is not None:
                    return await self._fetch(client, found)
            if not self.sources.no_index:
                for index in self.sources.index_urls:
                    cands = await self._index_page(client, index, req.name)
                    looked.append(index)
                    found = pick_sdist(cands, req, python_version)
                    if found is not None:
                        return await self._fetch(client, found)
        where = ", ".join(map(redact_url, looked)) or "nowhere (no index, no find-links)"
        raise DependencyError(f"{requirement!r} has no wheel for this interpreter and no source archive in {where}")

    async def _find_links(self, client: httpx.AsyncClient, location: str) -> list[Candidate]:
        if location.startswith(("http://", "https://")):
            try:
                resp = await client.get(location)
                resp.raise_for_status()
            except httpx.HTTPError:
                return []
            return parse_simple_html(resp.text, str(resp.url))
        folder = Path(location[len("file://") :] if location.startswith("file://") else location)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        return [Candidate(n, (folder / n).as_uri()) for n in names if (folder / n).is_file()]

    async def _index_page(self, client: httpx.AsyncClient, index: str, name: str) -> list[Candidate]:
        url = f"{index.rstrip('/')}/{canonicalize_name(name)}/"
        try:
            resp = await client.get(url, headers={"Accept": _SIMPLE_ACCEPT})
        except httpx.HTTPError as exc:
            raise DependencyError(f"cannot read {redact_url(url)}: {type(exc).__name__}") from None
        if resp.status_code == 404:
            return []
        if resp.status_code != 200:
            raise DependencyError(f"cannot read {redact_url(url)}: HTTP {resp.status_code}")
        if resp.headers.get("content-type", "").startswith("application/vnd.pypi.simple.v1+json"):
            return parse_simple_json(resp.json(), str(resp.url))
        return parse_simple_html(resp.text, str(resp.url))

    async def _fetch(self, client: httpx.AsyncClient, cand: Candidate) -> Path:
        filename = PurePosixPath(cand.filename).name
        if not filename or filename.startswith("."):
            raise DependencyError(f"refusing the file name {cand.filename!r} from {redact_url(cand.url)}")
        self.dest.mkdir(parents=True, exist_ok=True)
        target = self.dest / filename
        digest = hashlib.sha256()
        size = 0
        if cand.url.startswith("file://"):
            source = Path(unquote(urlsplit(cand.url).path))
            size = await asyncio.to_thread(_copy_capped, source, target, digest)
        else:
            try:
                async with client.stream("GET", cand.url) as resp:
                    resp.raise_for_status()
                    with target.open("wb") as out:
                        async for chunk in resp.aiter_bytes():
                            size += len(chunk)
                            if size > MAX_ARCHIVE_BYTES:
                                break
                            digest.update(chunk)
                            out.write(chunk)
            except httpx.HTTPError as exc:
                target.unlink(missing_ok=True)
                raise DependencyError(f"downloading {redact_url(cand.url)} failed: {type(exc).__name__}") from None
        if size > MAX_ARCHIVE_BYTES:
            target.unlink(missing_ok=True)
            raise DependencyError(f"{redact_url(cand.url)} is larger than {MAX_ARCHIVE_BYTES} bytes")
        if cand.sha256 and digest.hexdigest() != cand.sha256.lower():
            target.unlink(missing_ok=True)
            raise DependencyError(f"{redact_url(cand.url)}: sha256 does not match the index's ({cand.sha256})")
        return target

    async def direct(self, ref: Classified, workspace: Path | None) -> Path:
        """Fetch a URL or path reference as a file: a wheel, an archive, or a folder packed as a .tar.gz.

        Paths must stay inside the repo's workspace; git references are checked out as plain files.
        """
        if ref.kind == "vcs":
            return await self._git(ref)
        if ref.kind == "url":
            url, _, fragment = ref.location.partition("#")
            digest = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None
            name = unquote(PurePosixPath(urlsplit(url).path).name)
            if not name.endswith((*_SDIST_SUFFIXES, ".whl", ".tgz", ".tar.bz2")):
                raise DependencyError(f"requirement {ref.text!r}: {url} does not name a wheel or source archive")
            async with self._client() as client:
                return await self._fetch(client, Candidate(name, url, digest))
        return await self._local(ref, workspace)

    async def _git(self, ref: Classified) -> Path:
        """A git reference checked out as plain files (no hooks, no submodules, no filters) and packed."""
        scheme, _, rest = ref.location.partition("+")
        if scheme.lower() != "git":
            raise DependencyError(f"requirement {ref.text!r}: only git checkouts are supported, not {scheme}")
        url = rest.split("#", 1)[0]
        parts = urlsplit(url)
        if parts.scheme not in _GIT_SCHEMES:
            raise DependencyError(f"requirement {ref.text!r}: git over {parts.scheme or 'a local path'} is refused")
        rev = "HEAD"
        if "@" in parts.path:
            path, rev = parts.path.rsplit("@", 1)
            url = parts._replace(path=path).geturl()
        name = ref.name or PurePosixPath(parts.path).name.removesuffix(".git").split("@")[0] or "vcs"
        checkout = self.dest / f".checkout-{_safe(name)}"
        await asyncio.to_thread(shutil.rmtree, checkout, True)
        checkout.mkdir(parents=True)
        try:
            for args in (
                ["init", "-q"],
                ["fetch", "-q", "--depth", "1", "--no-tags", "--no-recurse-submodules", url, rev],
                ["checkout", "-q", "--detach", "FETCH_HEAD"],
            ):
                run = await run_host([*_SAFE_GIT, *args], timeout=self.timeout, cwd=checkout)
                if run.code != 0:
                    raise DependencyError(
                        f"requirement {ref.text!r}: git {args[0]} failed: {run.stdout.strip()[-500:]}"
                    )
            return await asyncio.to_thread(pack_tree, checkout, self.dest, name)
        finally:
            await asyncio.to_thread(shutil.rmtree, checkout, True)

    async def _local(self, ref: Classified, workspace: Path | None) -> Path:
        if workspace is None:
            raise DependencyError(f"requirement {ref.text!r} is a local path and no repo workspace was given")
        location = ref.location
        if location.lower().startswith("file:"):
            location = unquote(urlsplit(location).path)
        root = workspace.resolve()
        path = (root / location).resolve() if not location.startswith("/") else Path(location).resolve()
        if path != root and root not in path.parents:
            raise DependencyError(f"requirement {ref.text!r} points outside the repository ({path})")
        if path == root:
            raise DependencyError(f"requirement {ref.text!r} names the repository itself")
        if path.is_dir():
            return await asyncio.to_thread(pack_tree, path, self.dest, ref.name or path.name)
        if path.is_file() and path.name.endswith((*_SDIST_SUFFIXES, ".whl")):
            self.dest.mkdir(parents=True, exist_ok=True)
            target = self.dest / path.name
            await asyncio.to_thread(_copy_capped, path, target, hashlib.sha256())
            return target
        raise DependencyError(f"requirement {ref.text!r}: {location} is not a folder, wheel or source archive")


def wheel_name(path: Path) -> str | None:
    """The canonical project name of a wheel file, or None when the file name is not a wheel's."""
    try:
        return str(parse_wheel_filename(path.name)[0])
    except InvalidWheelFilename:
        return None


def _copy_capped(source: Path, target: Path, digest: hashlib._Hash) -> int:
    """Copy up to MAX_ARCHIVE_BYTES (+1 chunk) of a local file, hashing it; returns the bytes seen."""
    size = 0
    with source.open("rb") as src, target.open("wb") as out:
        while chunk := src.read(1024 * 1024):
            size += len(chunk)
            if size > MAX_ARCHIVE_BYTES:
                break
            digest.update(chunk)
            out.write(chunk)
    return size


__all__ = [
    "DEFAULT_BUILD_REQUIRES",
    "Classified",
    "DependencyError",
    "SourceFetcher",
    "Sources",
    "archive_build_requires",
    "classify",
    "missing_distribution",
    "pack_tree",
    "parse_simple_html",
    "parse_simple_json",
    "pick_sdist",
    "wheel_name",
]
