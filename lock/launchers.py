"""How a lock entry's command launches its package: `npx` (npm) or `uvx` / `uv tool run` (PyPI).

`parse_launch` reads the package specs and runner options out of the command
line; `warm_command` is the command that fills the runner's cache with exactly
the environment the server's own command will use (same specs, same options,
same env), and `infer_pin` turns an exact version in the command into a pin.

npx keys its cache directory by the list of package specs, so
`npm exec --yes --package SPEC -- true` installs into the directory
`npx -y SPEC ...` later runs from. uvx keys its cached environment by the
requirements and resolver options, not by the command it runs, so the same
options with `python -c pass` build it without starting the server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcpgw.gateway.specs.server_spec import Pin

_NPX_VALUE_OPTIONS = {
    "-p",
    "--package",
    "-c",
    "--call",
    "--registry",
    "--cache",
    "--userconfig",
    "--prefix",
    "-w",
    "--workspace",
}
_UV_VALUE_OPTIONS = {
    "--from",
    "--with",
    "-w",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--exclude-newer",
    "--exclude-newer-package",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--index-strategy",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--config-setting",
    "-C",
    "--refresh-package",
    "--reinstall-package",
    "--upgrade-package",
    "-P",
    "--no-binary-package",
    "--no-build-package",
    "--no-build-isolation-package",
    "--link-mode",
    "--cache-dir",
    "--directory",
    "--project",
    "--config-file",
    "--color",
    "--env-file",
    "--allow-insecure-host",
    "--constraints",
    "-c",
    "--overrides",
    "--build-constraints",
    "-b",
    "--torch-backend",
    "--python-platform",
    "--fork-strategy",
    "--build-constraint",
    "--constraint",
    "--override",
    "--with-executables-from",
}
EXACT_VERSION_RE = re.compile(r"^v?\d+(\.\d+)*((a|b|rc|c|\.?post|\.?dev)\d*)*([-+][0-9A-Za-z][0-9A-Za-z.+-]*)?$")


@dataclass(frozen=True)
class Launch:
    runner: str  # "npx" | "uvx"
    prefix: tuple[str, ...]  # the runner itself: ("npx",), ("uvx",), ("uv", "tool", "run")
    packages: tuple[str, ...]  # npm specs ("pkg@1.2.3"), or the uv requirement of --from
    options: tuple[str, ...]  # runner options before the command
    command: tuple[str, ...]  # what runs, with its arguments

    @property
    def registry(self) -> str:
        return "npm" if self.runner == "npx" else "pypi"


def parse_launch(command: str | None, args: tuple[str, ...] | list[str]) -> Launch | None:
    """The npx / uvx launch in a command line, or None when it is neither."""
    name = (command or "").rsplit("/", 1)[-1]
    args = tuple(args)
    if name == "npx":
        return _parse_npx((command or "npx",), args)
    if name == "uvx":
        return _parse_uvx((command or "uvx",), args)
    if name == "uv" and args[:2] == ("tool", "run"):
        return _parse_uvx((command or "uv", "tool", "run"), args[2:])
    return None


def _split_options(
    args: tuple[str, ...], value_options: set[str]
) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """(option tokens, (option, value) pairs, the rest from the first positional on)."""
    tokens: list[str] = []
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return tokens, pairs, list(args[i + 1 :])
        if not arg.startswith("-") or arg == "-":
            break
        if "=" in arg and arg.startswith("--"):
            key, value = arg.split("=", 1)
            tokens.append(arg)
            pairs.append((key, value))
        elif arg in value_options and i + 1 < len(args):
            tokens += [arg, args[i + 1]]
            pairs.append((arg, args[i + 1]))
            i += 1
        else:
            tokens.append(arg)
        i += 1
    return tokens, pairs, list(args[i:])


def _parse_npx(prefix: tuple[str, ...], args: tuple[str, ...]) -> Launch | None:
    tokens, pairs, rest = _split_options(args, _NPX_VALUE_OPTIONS)
    packages = [value for key, value in pairs if key in ("-p", "--package")]
    if not packages:
        if not rest:
            return None
        packages = [rest[0]]
    return Launch("npx", prefix, tuple(packages), tuple(tokens), tuple(rest))


def _parse_uvx(prefix: tuple[str, ...], args: tuple[str, ...]) -> Launch | None:
    tokens, pairs, rest = _split_options(args, _UV_VALUE_OPTIONS)
    source = [value for key, value in pairs if key == "--from"]
    if source:
        return Launch("uvx", prefix, (source[-1],), tuple(tokens), tuple(rest))
    if not rest:
        return None
    return Launch("uvx", prefix, (_uv_requirement(rest[0]),), tuple(tokens), tuple(rest))


def _uv_requirement(spec: str) -> str:
    """`uvx pkg@1.0` means the requirement `pkg==1.0`."""
    if "@" in spec and "==" not in spec and not spec.startswith(("git+", "http")):
        name, version = spec.split("@", 1)
        return f"{name}=={version}" if version and version != "latest" else name
    return spec


def warm_command(launch: Launch) -> list[str]:
    """A command that fills the cache the server's command reads, and exits."""
    if launch.runner == "npx":
        npm = launch.prefix[0][: -len("npx")] + "npm" if launch.prefix[0].endswith("npx") else "npm"
        command = [npm, "exec", "--yes"]
        for spec in launch.packages:
            command += ["--package", spec]
        return [*command, "--", "true"]
    options = list(launch.options)
    if not any(o == "--from" or o.startswith("--from=") for o in options):
        options += ["--from", launch.packages[0]]
    return [*launch.prefix, *options, "python", "-c", "pass"]


def split_npm_spec(spec: str) -> tuple[str, str | None]:
    """'@scope/pkg@1.2.3' -> ('@scope/pkg', '1.2.3'); no version -> None."""
    at = spec.rfind("@")
    if at <= 0:
        return spec, None
    return spec[:at], spec[at + 1 :] or None


def split_pypi_requirement(requirement: str) -> tuple[str, str | None]:
    """'pkg[extra]==1.2' -> ('pkg', '1.2'); anything but one exact `==` -> version None."""
    match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(==\s*([^,;*\s]+))?\s*", requirement)
    if not match:
        return requirement, None
    return match.group(1), match.group(4)


def infer_pin(command: str | None, args: tuple[str, ...] | list[str]) -> Pin | None:
    """A registry pin when the command names its package at an exact version."""
    launch = parse_launch(command, args)
    if launch is None or not launch.packages:
        return None
    if launch.runner == "npx":
        package, version = split_npm_spec(launch.packages[0])
    else:
        package, version = split_pypi_requirement(launch.packages[0])
    if not version or not EXACT_VERSION_RE.match(version) or version in ("latest", "next"):
        return None
    return Pin(registry=launch.registry, package=package, version=version)
