"""Source trees at a pinned commit: found or fetched, verified, extracted once into the cache.

Lookup order for `owner/repo@commit`:
  1. each folder of `--sources DIR` / `MCPGW_SOURCES` (os.pathsep-separated):
     `DIR/owner+repo@commit.tar.gz` (a code host's archive: one top folder), or a
     directory of that name (a checkout or an unpacked archive);
  2. the code host's archive of that commit, downloaded into the cache.
Either way the archive goes through the same verification and extraction.
Verification: the lock's `sha256` when it pins one; otherwise the commit must
be named by the archive itself (the top folder `repo-<commit>`, or the pax
comment `git archive` writes); a directory with `.git` must have HEAD at it.
The extracted tree lands in `trees/owner+repo@commit/`, keyed by the commit
(git's own content address), written under a temporary name and renamed, so
concurrent installs extract it once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import anyio

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.gateway.specs.server_spec import Source

TREE_MARKER = ".mcpgw-tree.json"
ARCHIVE_URL = "https://codeload.github.com/{repo}/tar.gz/{commit}"
_locks: dict[str, anyio.Lock] = {}


class SourceError(Exception):
    """A source cannot be had: says which and why, in one line."""


def source_name(source: Source) -> str:
    return f"{source.repo.replace('/', '+')}@{source.commit}"


def sources_dirs(explicit: str | None = None) -> list[Path]:
    """The folders to look in; one that is not a folder is refused at once, naming where it was given (a
    typo would otherwise only show, much later, as a download from the code host or its failure)."""
    raw = explicit if explicit is not None else os.environ.get("MCPGW_SOURCES", "")
    folders = [Path(p).expanduser() for p in raw.split(os.pathsep) if p]
    for folder in folders:
        if not folder.is_dir():
            given = "--sources" if explicit is not None else "MCPGW_SOURCES"
            what = "is not a folder" if folder.exists() else "does not exist"
            raise GatewayError(
                f"{given}: {folder} {what} (it holds owner+repo@commit.tar.gz archives or folders of that name)"
            )
    return folders


async def source_tree(source: Source, cache: Path, sources: list[Path]) -> Path:
    """The tree of the whole repository at the commit, extracted in the cache (once)."""
    name = source_name(source)
    lock = _locks.setdefault(name, anyio.Lock())
    async with lock:
        tree = cache / "trees" / name
        if (tree / TREE_MARKER).exists():
            return tree
        local = _find_local(name, sources)
        if local is not None and local.is_dir():
            return await anyio.to_thread.run_sync(_copy_dir, local, source, tree)
        archive = local or await _download(source, cache)
        return await anyio.to_thread.run_sync(_extract, archive, source, tree)


def _find_local(name: str, sources: list[Path]) -> Path | None:
    for folder in sources:
        for candidate in (folder / f"{name}.tar.gz", folder / name):
            if candidate.exists():
                return candidate
    return None


async def _download(source: Source, cache: Path) -> Path:
    import httpx

    target = cache / "archives" / f"{source_name(source)}.tar.gz"
    if target.exists():
        return target
    url = ARCHIVE_URL.format(repo=source.repo, commit=source.commit)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    try:
        async with httpx.AsyncClient(follow_redirects=True, timeout=60) as client:
            async with client.stream("GET", url) as response:
                response.raise_for_status()
                with partial.open("wb") as out:
                    async for chunk in response.aiter_bytes():
                        out.write(chunk)
    except (httpx.HTTPError, OSError) as exc:
        partial.unlink(missing_ok=True)
        raise SourceError(
            f"{source.repo}@{source.commit[:7]}: not in the sources folder(s) and cannot be "
            f"downloaded from {url}: {exc or type(exc).__name__} (offline? put "
            f"{source_name(source)}.tar.gz in a folder and pass --sources DIR)"
        ) from None
    partial.rename(target)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _extract(archive: Path, source: Source, tree: Path) -> Path:
    digest = _sha256(archive)
    if source.sha256 and digest != source.sha256:
        raise SourceError(f"{archive}: sha256 {digest} differs from the lock's {source.sha256}")
    try:
        with tarfile.open(archive, "r:*") as tar:
            comment = (tar.pax_headers or {}).get("comment", "")
            members = tar.getmembers()
            tops = {m.name.split("/", 1)[0] for m in members}
            if len(tops) != 1:
                raise SourceError(f"{archive}: expected one top folder (a code host's archive), found {len(tops)}")
            top = tops.pop()
            if not source.sha256 and comment != source.commit and not top.endswith(source.commit):
                raise SourceError(
                    f"{archive}: does not name commit {source.commit} (top folder {top!r}); "
                    "pin its sha256 in the lock to use it anyway"
                )
            staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=_parent(tree)))
            try:
                _extract_safely(tar, members, staging)
            except (tarfile.TarError, OSError) as exc:
                shutil.rmtree(staging, ignore_errors=True)
                raise SourceError(f"{archive}: cannot extract: {exc}") from None
    except tarfile.TarError as exc:
        raise SourceError(f"{archive}: not a readable tar archive: {exc}") from None
    return _publish(
        staging / top, tree, {"archive": str(archive), "sha256": digest, "commit": source.commit}, cleanup=staging
    )


def _extract_safely(tar: tarfile.TarFile, members: list[tarfile.TarInfo], into: Path) -> None:
    """Extract with the "data" filter (no absolute paths, no escaping links, no devices). Pythons
    before 3.11.4 lack tar filters: there the same rules are checked here first."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
        return
    root = into.resolve()
    for member in members:
        target = (root / member.name).resolve()
        if root != target and root not in target.parents:
            raise tarfile.TarError(f"member {member.name!r} would land outside the extraction folder")
        if member.islnk() or member.issym():
            link = (target.parent / member.linkname).resolve() if member.issym() else (root / member.linkname).resolve()
            if root != link and root not in link.parents:
                raise tarfile.TarError(f"link {member.name!r} points outside the extraction folder")
        elif not (member.isfile() or member.isdir()):
            raise tarfile.TarError(f"member {member.name!r} is not a file, folder or link")
    tar.extractall(into, members=members)  # noqa: S202 - every member was checked above


def _copy_dir(folder: Path, source: Source, tree: Path) -> Path:
    if (folder / ".git").exists():
        head = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True)
        if head.returncode != 0 or head.stdout.strip() != source.commit:
            raise SourceError(f"{folder}: checkout is at {head.stdout.strip() or '?'}, not {source.commit}")
    staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=_parent(tree)))
    shutil.copytree(folder, staging / "tree", symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return _publish(staging / "tree", tree, {"directory": str(folder), "commit": source.commit}, cleanup=staging)


def _parent(tree: Path) -> Path:
    tree.parent.mkdir(parents=True, exist_ok=True)
    return tree.parent


def _publish(staged: Path, tree: Path, info: dict[str, str], cleanup: Path) -> Path:
    (staged / TREE_MARKER).write_text(json.dumps(info))
    try:
        if tree.exists():  # a half-written tree from an interrupted run
            shutil.rmtree(tree)
        staged.rename(tree)
    except OSError:
        if not (tree / TREE_MARKER).exists():
            raise
    finally:
        shutil.rmtree(cleanup, ignore_errors=True)
    return tree
